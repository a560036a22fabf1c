//! The language switcher's target: `GET /lang/{tag}?back=/path` remembers
//! the choice in a cookie and returns to the page, so switching works with
//! plain links, without JavaScript. A signed-in account remembers it too:
//! the notices mailed to it (a receipt, an admin's unbind) follow it.

use app::i18n::Lang;
use axum::{
    extract::{Path, Query, State},
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
};
use serde::Deserialize;
use tower_sessions::Session;

use crate::state::ServerState;

#[derive(Debug, Deserialize)]
pub struct Back {
    back: Option<String>,
}

/// Sets the `lang` cookie for a year and redirects back (only ever to a
/// path on this site). An unknown language is a 404 and sets nothing.
pub async fn switch(
    State(state): State<ServerState>,
    session: Session,
    Path(tag): Path<String>,
    Query(query): Query<Back>,
) -> Response {
    let Some(lang) = Lang::parse(&tag).filter(|l| l.tag().eq_ignore_ascii_case(&tag)) else {
        return (StatusCode::NOT_FOUND, "unknown language").into_response();
    };
    // Best effort: the switch itself never fails for it.
    if let Ok(Some(principal)) = service::session::principal_of(&state.services, &session).await
        && let Err(error) =
            engine::accounts::remember_lang(&state.services.pool, principal.id, lang).await
    {
        tracing::warn!(error = format!("{error:#}"), "remembering a language");
    }
    let back = local_path(query.back.as_deref());
    let mut response = Redirect::to(back).into_response();
    let cookie = format!(
        "{}={}; Path=/; Max-Age=31536000; SameSite=Lax",
        Lang::COOKIE,
        lang.tag()
    );
    if let Ok(value) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

/// `back` if it is a path on this site; the home page otherwise (never an
/// open redirect: no scheme, no `//host`, no backslash tricks).
fn local_path(back: Option<&str>) -> &str {
    match back {
        Some(path)
            if path.starts_with('/')
                && !path.starts_with("//")
                && !path.contains('\\')
                && !path.chars().any(char::is_control) =>
        {
            path
        }
        _ => "/",
    }
}

#[cfg(test)]
mod tests {
    use super::local_path;

    #[test]
    fn only_local_paths_are_followed() {
        assert_eq!(local_path(Some("/s/demo?x=1")), "/s/demo?x=1");
        assert_eq!(local_path(Some("//evil.example")), "/");
        assert_eq!(local_path(Some("https://evil.example")), "/");
        assert_eq!(local_path(Some("/\\evil.example")), "/");
        assert_eq!(local_path(Some("/a\r\nSet-Cookie: x")), "/");
        assert_eq!(local_path(None), "/");
    }
}
