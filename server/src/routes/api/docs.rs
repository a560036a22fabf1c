//! `GET /api/v1/docs`: the API described for people, rendered on the server
//! from the same OpenAPI document the machines read (no script, nothing
//! downloaded), so the page cannot drift from what the server does.
//!
//! Each operation shows its parameters, its request body's schema and each
//! answer's schema; the schemas follow, one table of fields each, and the
//! kinds of problem every error's `type` points to (`#problem-<kind>`).

use axum::{extract::State, response::Html};
use engine::outcome::ErrorKind;
use serde_json::Value;
use utoipa::OpenApi as _;

use super::schema::ApiDoc;
use crate::{problem::problem_type, state::ServerState};

pub async fn page(State(state): State<ServerState>) -> Html<String> {
    Html(render(&ApiDoc::openapi(), &state.stylesheet.0))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A schema in a few words: a link to a named one, `array of …`, a type
/// with its format, or the values of an enumeration.
fn summary(schema: &Value) -> String {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("<a href=\"#schema-{0}\"><code>{0}</code></a>", escape(name));
    }
    for composite in ["oneOf", "anyOf", "allOf"] {
        if let Some(items) = schema.get(composite).and_then(Value::as_array) {
            let parts: Vec<String> = items.iter().map(summary).collect();
            return parts.join(" | ");
        }
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        let values: Vec<String> = values
            .iter()
            .map(|v| format!("<code>{}</code>", escape(&v.to_string())))
            .collect();
        return format!("one of {}", values.join(", "));
    }
    let kind = match schema.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join(" or "),
        _ => "any".to_owned(),
    };
    if let Some(items) = schema.get("items") {
        return format!("array of {}", summary(items));
    }
    match schema.get("format").and_then(Value::as_str) {
        Some(format) => format!("{} ({})", escape(&kind), escape(format)),
        None => escape(&kind),
    }
}

/// `application/json: Schema` for each media type of a body.
fn bodies(content: Option<&Value>) -> String {
    let Some(content) = content.and_then(Value::as_object) else {
        return String::new();
    };
    content
        .iter()
        .map(|(media, body)| {
            let schema = body
                .get("schema")
                .map(summary)
                .unwrap_or_else(|| "no body".to_owned());
            format!(" <code>{}</code>: {schema}", escape(media))
        })
        .collect::<Vec<_>>()
        .join(";")
}

fn operation(html: &mut String, method: &str, path: &str, operation: &Value) {
    let text = |key: &str| operation.get(key).and_then(Value::as_str);
    html.push_str(&format!(
        "<section class=\"card endpoint\"><h2><code>{method} {}</code></h2>",
        escape(path)
    ));
    if let Some(summary) = text("summary") {
        html.push_str(&format!("<p>{}</p>", escape(summary)));
    }
    if let Some(description) = text("description") {
        html.push_str(&format!("<p class=\"muted\">{}</p>", escape(description)));
    }
    if let Some(parameters) = operation.get("parameters").and_then(Value::as_array) {
        html.push_str("<h3>Parameters</h3><ul>");
        for parameter in parameters {
            let field = |key: &str| parameter.get(key).and_then(Value::as_str).unwrap_or("");
            let required = parameter.get("required").and_then(Value::as_bool) == Some(true);
            html.push_str(&format!(
                "<li><code>{}</code> ({}{}): {} {}</li>",
                escape(field("name")),
                escape(field("in")),
                if required { ", required" } else { "" },
                parameter.get("schema").map(summary).unwrap_or_default(),
                escape(field("description")),
            ));
        }
        html.push_str("</ul>");
    }
    if let Some(body) = operation.get("requestBody") {
        html.push_str(&format!(
            "<h3>Request body</h3><p>{}</p>",
            bodies(body.get("content"))
        ));
    }
    html.push_str("<h3>Responses</h3><ul>");
    if let Some(responses) = operation.get("responses").and_then(Value::as_object) {
        for (status, response) in responses {
            let description = response
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or("");
            html.push_str(&format!(
                "<li><code>{}</code> {}{}</li>",
                escape(status),
                escape(description),
                bodies(response.get("content"))
            ));
        }
    }
    html.push_str("</ul></section>");
}

fn schema_table(html: &mut String, name: &str, schema: &Value) {
    html.push_str(&format!(
        "<section class=\"card schema\" id=\"schema-{0}\"><h3><code>{0}</code></h3>",
        escape(name)
    ));
    if let Some(description) = schema.get("description").and_then(Value::as_str) {
        html.push_str(&format!("<p>{}</p>", escape(description)));
    }
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        html.push_str(&format!("<p>{}</p></section>", summary(schema)));
        return;
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    html.push_str(
        "<table><thead><tr><th>Field</th><th>Type</th><th>About</th></tr></thead><tbody>",
    );
    for (field, property) in properties {
        html.push_str(&format!(
            "<tr><td><code>{}</code>{}</td><td>{}</td><td>{}</td></tr>",
            escape(field),
            if required.contains(&field.as_str()) {
                ""
            } else {
                " (optional)"
            },
            summary(property),
            escape(
                property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
        ));
    }
    html.push_str("</tbody></table></section>");
}

/// The page, styled with the site's stylesheet (`stylesheet`: its address).
fn render(doc: &utoipa::openapi::OpenApi, stylesheet: &str) -> String {
    let doc = serde_json::to_value(doc).unwrap_or_default();
    let mut html = format!(
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>AdmitOne API</title><link rel=\"stylesheet\" href=\"{}\"></head>\
         <body><main class=\"container api-docs\"><h1>AdmitOne API</h1>",
        escape(stylesheet)
    );
    if let Some(description) = doc.pointer("/info/description").and_then(Value::as_str) {
        html.push_str(&format!("<p class=\"lead\">{}</p>", escape(description)));
    }
    html.push_str(
        "<p>The machine-readable document: <a href=\"/api/v1/openapi.json\"><code>/api/v1/openapi.json</code></a> (OpenAPI 3). \
         Make a token under <em>API tokens</em> in the console. \
         Every error is a <a href=\"#problems\">problem document</a>.</p>",
    );
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for (path, item) in paths {
            for method in ["get", "post", "put", "patch", "delete"] {
                if let Some(op) = item.get(method) {
                    operation(&mut html, &method.to_uppercase(), path, op);
                }
            }
        }
    }
    html.push_str(
        "<h2 id=\"problems\">Problems</h2><p>Every 4xx and 5xx answer is \
         <code>application/problem+json</code> (RFC 9457): <code>type</code> links to its kind below, \
         <code>title</code> names the kind, <code>status</code> repeats the HTTP status, \
         <code>detail</code> says what happened, <code>code</code> is the stable word to match on \
         (<code>code_bound</code>, <code>invalid_input</code>, …) and <code>field</code>, when present, \
         names the input. Answers that ask you to wait carry <code>Retry-After</code>; throttled ones also \
         <code>RateLimit-Limit</code>, <code>RateLimit-Remaining</code> and <code>RateLimit-Reset</code>.</p><ul>",
    );
    for kind in ErrorKind::ALL {
        let (anchor, title) = problem_type(kind);
        html.push_str(&format!(
            "<li id=\"problem-{anchor}\"><code>{}</code> {}</li>",
            kind.status().as_u16(),
            escape(title)
        ));
    }
    html.push_str("</ul><h2 id=\"schemas\">Schemas</h2>");
    if let Some(schemas) = doc
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        for (name, schema) in schemas {
            schema_table(&mut html, name, schema);
        }
    }
    html.push_str("</main></body></html>");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_shows_every_operation_its_schemas_and_every_problem_kind() {
        let doc = ApiDoc::openapi();
        let html = render(&doc, "/pkg/admitone.Aa1-_Bb2Cc3Dd4Ee5Ff6Gg.css");
        assert!(
            html.contains(
                r#"<link rel="stylesheet" href="/pkg/admitone.Aa1-_Bb2Cc3Dd4Ee5Ff6Gg.css">"#
            ),
            "the page is styled by the build's own stylesheet"
        );
        let json = serde_json::to_value(&doc).expect("json");
        for (path, item) in json["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("item").keys() {
                let heading = format!("<code>{} {}</code>", method.to_uppercase(), escape(path));
                assert!(html.contains(&heading), "{heading} is missing");
            }
        }
        for name in json["components"]["schemas"]
            .as_object()
            .expect("schemas")
            .keys()
        {
            assert!(
                html.contains(&format!("id=\"schema-{name}\"")),
                "schema {name}"
            );
        }
        // A request body and a response body, by name, linked to their tables.
        assert!(
            html.contains("<a href=\"#schema-IssueBody\">"),
            "request schema"
        );
        assert!(
            html.contains("<a href=\"#schema-IssuedBatch\">"),
            "response schema"
        );
        assert!(
            html.contains("<code>application/problem+json</code>: <a href=\"#schema-ErrorBody\">")
        );
        for kind in ErrorKind::ALL {
            let (anchor, _) = problem_type(kind);
            assert!(
                html.contains(&format!("id=\"problem-{anchor}\"")),
                "{kind:?}"
            );
        }
    }
}
