//! The server answers only for its own names: `server.public_url`'s host,
//! the hosts an operator lists (`server.allowed_hosts`), and its loopback
//! names on the port it listens on. A page on another site whose name
//! re-resolves to the server's address (DNS rebinding) sends its own name
//! as `Host`: it reads nothing (not even the development mailbox) and
//! changes nothing. Health checks answer whatever the name.

use reqwest::{StatusCode, header};
use sqlx::PgPool;

use crate::support::app::{TestApp, new_client, spawn_app};

/// The port the test server listens on.
fn port_of(app: &TestApp) -> u16 {
    app.address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port")
}

async fn get_as_host(app: &TestApp, host: &str, path: &str) -> reqwest::Response {
    new_client()
        .get(format!("{}{path}", app.address))
        .header(header::HOST, host)
        .send()
        .await
        .expect("request")
}

#[sqlx::test(migrations = "../migrations")]
async fn a_rebound_name_reads_and_changes_nothing(pool: PgPool) {
    let app = spawn_app(pool).await;
    let port = port_of(&app);
    let rebound = format!("rebind.example:{port}");
    // The positive control: the server's own names answer.
    for own in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        assert_eq!(get_as_host(&app, &own, "/").await.status(), 200, "{own}");
        assert_eq!(
            get_as_host(&app, &own, "/dev/mailbox").await.status(),
            200,
            "the dev mailbox of a loopback development server, by {own}"
        );
    }
    for path in ["/", "/dev/mailbox", "/login", "/api/v1/openapi.json"] {
        let refused = get_as_host(&app, &rebound, path).await;
        let status = refused.status();
        let body = refused.text().await.expect("body");
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert!(body.contains("unknown_host"), "{path}: {body}");
        assert!(!body.contains("mailbox"), "{path} shows nothing: {body}");
    }
    // A state-changing request the rebound page could send (its own
    // origin, its own host): refused, and no mail is queued.
    let forgot = new_client()
        .post(format!("{}/api/auth/forgot", app.address))
        .header(header::HOST, &rebound)
        .header(header::ORIGIN, format!("http://{rebound}"))
        .form(&[("email", "someone@example.com")])
        .send()
        .await
        .expect("request");
    assert_eq!(forgot.status(), StatusCode::BAD_REQUEST);
    let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(queued, 0, "nothing was asked");
    // Health checks come from load balancers by any name.
    assert_eq!(get_as_host(&app, &rebound, "/healthz").await.status(), 200);
}

/// A cross-site request naming an allowed host in `Host` but coming from
/// another origin is refused: the origin must be one of the server's own,
/// never whatever `Host` says.
#[sqlx::test(migrations = "../migrations")]
async fn the_origin_must_be_the_servers_own_not_the_hosts(pool: PgPool) {
    let app = spawn_app(pool).await;
    let port = port_of(&app);
    let from = |origin: &str| {
        new_client()
            .post(format!("{}/api/auth/logout", app.address))
            .header(header::ORIGIN, origin)
            .send()
    };
    assert_ne!(
        from(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN,
        "the server's own origin"
    );
    assert_eq!(
        from(&format!("http://evil.example:{port}"))
            .await
            .expect("request")
            .status(),
        StatusCode::FORBIDDEN
    );
}
