//! The logs: secrets never reach them (nor responses), with every log line
//! on (`RUST_LOG=trace`, JSON) from the real server binary; a request's log
//! lines name the signed-in account (an id, never an email) whichever door
//! it came in by.

use sqlx::PgPool;

use crate::support::app::new_client;
use crate::support::processes::LoggedServer;

#[sqlx::test(migrations = "../migrations")]
async fn passwords_never_appear_in_logs_or_responses(pool: PgPool) {
    let server = LoggedServer::start(&pool).await;
    let address = server.address.clone();
    let client = new_client();

    let first = "Fz9-first-Secret-Passw0rd";
    let wrong = "Qx7-wrong-Secret-Passw0rd";
    let second = "Kp3-second-Secret-Passw0rd";
    let mut bodies = Vec::new();
    let token = crate::support::mail::signup_token(&pool, "ada@example.com").await;
    for (path, form) in [
        ("/api/auth/register", vec![("email", "ada@example.com")]),
        (
            "/api/auth/register/finish",
            vec![
                ("token", "not-a-token"),
                ("display_name", "Ada"),
                ("password", first),
                ("password_confirm", first),
            ],
        ),
        (
            "/api/auth/register/finish",
            vec![
                ("token", token.as_str()),
                ("display_name", "Ada"),
                ("password", first),
                ("password_confirm", first),
            ],
        ),
        (
            "/api/auth/login",
            vec![("email", "ada@example.com"), ("password", wrong)],
        ),
        (
            "/api/auth/login",
            vec![("email", "ada@example.com"), ("password", first)],
        ),
        (
            "/api/auth/change-password",
            vec![
                ("current_password", wrong),
                ("new_password", second),
                ("new_password_confirm", second),
            ],
        ),
        (
            "/api/auth/change-password",
            vec![
                ("current_password", first),
                ("new_password", second),
                ("new_password_confirm", second),
            ],
        ),
    ] {
        let response = client
            .post(format!("{address}{path}"))
            .form(&form)
            .send()
            .await
            .expect("request");
        bodies.push(response.text().await.expect("body"));
    }
    let json_login = client
        .post(format!("{address}/api/v1/auth/login"))
        .json(&serde_json::json!({ "email": "ada@example.com", "password": wrong }))
        .send()
        .await
        .expect("request");
    bodies.push(json_login.text().await.expect("body"));

    let logs = server.stop();
    assert!(
        logs.contains("/api/auth/login"),
        "the capture holds the requests' log lines: {logs}"
    );
    assert!(logs.contains("/api/v1/auth/login"), "and the JSON API's");
    for secret in [first, wrong, second, token.as_str()] {
        assert!(
            !logs.contains(secret),
            "a password or a link reached the logs"
        );
        for body in &bodies {
            assert!(
                !body.contains(secret),
                "a password reached a response: {body}"
            );
        }
    }
}

/// The request's log lines say who asked (an account id, never an email),
/// whichever door the share page was read through. The use cases run in
/// spans of their own; the principal must still land on the request's
/// span, where operators look for it.
#[sqlx::test(migrations = "../migrations")]
async fn the_request_span_names_the_signed_in_learner_on_both_doors(pool: PgPool) {
    use engine::{
        accounts::AccountId,
        tenants::{TenantName, TenantSlug, ensure_tenant_with_owner},
    };
    let server = LoggedServer::start(&pool).await;
    let address = server.address.clone();
    let client = new_client();
    let token = crate::support::mail::signup_token(&pool, "lin@example.com").await;
    let me: serde_json::Value = client
        .post(format!("{address}/api/v1/auth/register/finish"))
        .json(&serde_json::json!({
            "token": token,
            "password": "a long enough password",
            "display_name": "Lin",
        }))
        .send()
        .await
        .expect("register")
        .json()
        .await
        .expect("json");
    let id = me["id"].as_str().expect("account id").to_owned();
    let (tenant, _) = ensure_tenant_with_owner(
        &pool,
        &TenantSlug::parse("logs").expect("slug"),
        &TenantName::parse("Logs").expect("name"),
        AccountId(uuid::Uuid::parse_str(&id).expect("uuid")),
    )
    .await
    .expect("tenant");
    let share: serde_json::Value = client
        .post(format!("{address}/api/v1/tenants/{}/shares", tenant.0))
        .json(&serde_json::json!({ "title": "Logged course", "status": "active" }))
        .send()
        .await
        .expect("create share")
        .json()
        .await
        .expect("json");
    let slug = share["slug"].as_str().expect("slug").to_owned();
    let share_id = share["id"].as_str().expect("share id").to_owned();
    for path in [format!("/api/v1/s/{slug}"), format!("/s/{slug}")] {
        let response = client
            .get(format!("{address}{path}"))
            .send()
            .await
            .expect("share page");
        assert_eq!(response.status(), 200, "{path}");
    }
    // An API token acts for its admin in its tenant: named the same way.
    let (_, token) = engine::tokens::create(
        &pool,
        tenant,
        AccountId(uuid::Uuid::parse_str(&id).expect("uuid")),
        "logs",
        &[engine::tokens::Scope::Read],
        None,
        None,
    )
    .await
    .expect("token");
    let codes_path = format!("/api/v1/shares/{share_id}/codes");
    let response = new_client()
        .get(format!("{address}{codes_path}"))
        .bearer_auth(secrecy::ExposeSecret::expose_secret(&token))
        .send()
        .await
        .expect("codes");
    assert_eq!(response.status(), 200);

    let logs = server.stop();
    let events: Vec<serde_json::Value> = logs
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    // Some line of the request `path` has a request span whose `field` is `value`.
    let names = |path: &str, field: &str, value: &str| {
        events.iter().any(|event| {
            event["spans"].as_array().is_some_and(|spans| {
                spans.iter().any(|span| {
                    span["name"] == "request" && span["path"] == path && span[field] == value
                })
            })
        })
    };
    for path in [format!("/api/v1/s/{slug}"), format!("/s/{slug}")] {
        assert!(
            names(&path, "principal", &id),
            "no log line of {path} names principal {id}"
        );
    }
    let tenant = tenant.0.to_string();
    let shares_path = format!("/api/v1/tenants/{tenant}/shares");
    assert!(
        names(&shares_path, "tenant", &tenant),
        "the console request names its tenant"
    );
    assert!(
        names(&codes_path, "principal", &id),
        "a token request names its admin"
    );
    assert!(
        names(&codes_path, "tenant", &tenant),
        "a token request names its tenant"
    );
}
