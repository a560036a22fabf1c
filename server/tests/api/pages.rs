use sqlx::PgPool;

use crate::support::app::spawn_app;

#[sqlx::test(migrations = "../migrations")]
async fn home_page_is_server_rendered_with_the_shell(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/").await;
    assert_eq!(response.status(), 200);
    let html = response.text().await.expect("body");
    assert!(html.contains("<title>AdmitOne</title>"), "{html}");
    assert!(html.contains("one person, one code"), "{html}");
    assert!(html.contains(r#"class="site-header""#), "header missing");
    assert!(html.contains(r#"class="site-footer""#), "footer missing");
    assert!(
        html.contains("/pkg/admitone.js"),
        "hydration script missing"
    );
}

#[sqlx::test(migrations = "../migrations")]
async fn unknown_pages_get_a_404_page(pool: PgPool) {
    let app = spawn_app(pool).await;
    let response = app.get("/no/such/page").await;
    assert_eq!(response.status(), 404);
    let html = response.text().await.expect("body");
    assert!(html.contains("Page not found"), "{html}");
    assert!(
        html.contains(r#"class="site-header""#),
        "404 keeps the page shell"
    );
}
