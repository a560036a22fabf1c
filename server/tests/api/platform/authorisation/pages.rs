//! Admin pages refuse learners and admins of other tenants, and send an
//! anonymous visitor to sign in.

use sqlx::PgPool;

use super::world;
use crate::support::app::spawn_app;

#[sqlx::test(migrations = "../migrations")]
async fn admin_pages_refuse_learners_and_other_tenants(pool: PgPool) {
    let app = spawn_app(pool).await;
    let w = world(&app).await;
    let page = format!("/admin/t/{}", w.tenant_b);

    for (who, client) in [("learner", &w.learner), ("other admin", &w.admin_a)] {
        let response = app.get_page_as(client, &page).await;
        assert_eq!(response.status(), 403, "{who}");
        let html = response.text().await.expect("body");
        assert!(html.contains("Not available"), "{who}: {html}");
        assert!(
            !html.contains("tenant-b"),
            "{who} sees nothing of the tenant"
        );
    }
    let own = app.get_page_as(&w.admin_b, &page).await;
    assert_eq!(own.status(), 200);
    assert!(own.text().await.expect("body").contains("tenant-b"));

    let anonymous = app.get_page_as(&w.anonymous, &page).await;
    assert!(
        anonymous.status().is_redirection(),
        "{}",
        anonymous.status()
    );
    assert!(
        anonymous.headers()["location"]
            .to_str()
            .expect("ascii")
            .starts_with("/login")
    );
}
