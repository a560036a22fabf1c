//! A tenant always keeps an owner, however many change at once (the trigger
//! serialises demotions on the tenant's row, without blocking what
//! references the tenant); tenant signup from the web follows its setting
//! and needs a verified address.

use sqlx::PgPool;
use uuid::Uuid;

use super::{PASSWORD, post, roles, tenant_with_owner};
use crate::support::app::{new_client, spawn_app, spawn_app_with};

/// The last owner can neither leave, nor be demoted, nor be removed; with
/// a second owner, one may go.
#[sqlx::test(migrations = "../migrations")]
async fn a_tenant_always_keeps_an_owner(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (tenant, owner) = tenant_with_owner(&app, "owner@acme.example").await;
    let t = tenant.to_string();
    let me: Uuid = sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'owner@acme.example'")
        .fetch_one(&app.pool)
        .await
        .expect("owner");
    let m = me.to_string();
    for (path, form) in [
        (
            "/api/admin/team/role",
            vec![
                ("tenant_id", t.as_str()),
                ("account_id", m.as_str()),
                ("role", "admin"),
            ],
        ),
        (
            "/api/admin/team/remove",
            vec![("tenant_id", t.as_str()), ("account_id", m.as_str())],
        ),
        (
            "/api/admin/team/leave",
            vec![("tenant_id", t.as_str()), ("confirm", "yes")],
        ),
    ] {
        let (status, body) = post(&app, &owner, path, &form).await;
        assert_eq!(status, 409, "{path}: {body}");
        assert_eq!(body["Refused"]["reason"], "last_owner", "{path}");
    }
    assert_eq!(
        roles(&app, tenant).await,
        vec![("owner@acme.example".into(), "owner".into())]
    );

    // A second owner: now the first may leave.
    let second = app.create_account("second@acme.example", PASSWORD).await;
    sqlx::query(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'admin')",
    )
    .bind(tenant)
    .bind(second.0)
    .execute(&app.pool)
    .await
    .expect("member");
    let (status, _) = post(
        &app,
        &owner,
        "/api/admin/team/role",
        &[
            ("tenant_id", &t),
            ("account_id", &second.0.to_string()),
            ("role", "owner"),
        ],
    )
    .await;
    assert!(status < 400);
    let (status, body) = post(&app, &owner, "/api/admin/team/leave", &[("tenant_id", &t)]).await;
    assert_eq!(
        (status, body["Invalid"]["field"].clone()),
        (422, "confirm".into()),
        "unconfirmed"
    );
    let (status, _) = post(
        &app,
        &owner,
        "/api/admin/team/leave",
        &[("tenant_id", &t), ("confirm", "yes")],
    )
    .await;
    assert!(status < 400);
    assert_eq!(
        roles(&app, tenant).await,
        vec![("second@acme.example".into(), "owner".into())]
    );
}

/// Two owners demoting each other at the same moment: one wins, the
/// tenant keeps an owner. (The trigger serialises on the tenant's row.)
#[sqlx::test(migrations = "../migrations")]
async fn owners_demoting_each_other_at_once_leave_one_owner(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (tenant, first) = tenant_with_owner(&app, "first@acme.example").await;
    let t = tenant.to_string();
    let other = app.create_account("second@acme.example", PASSWORD).await;
    let second = new_client();
    app.login_as(&second, "second@acme.example", PASSWORD).await;
    let first_id: Uuid =
        sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'first@acme.example'")
            .fetch_one(&app.pool)
            .await
            .expect("first");
    for round in 0..20 {
        sqlx::query(
            "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner'), ($1, $3, 'owner')
             ON CONFLICT (tenant_id, account_id) DO UPDATE SET role = 'owner'",
        )
        .bind(tenant)
        .bind(first_id)
        .bind(other.0)
        .execute(&app.pool)
        .await
        .expect("both owners");
        let (other_id, first_s) = (other.0.to_string(), first_id.to_string());
        let demote_other = [
            ("tenant_id", t.as_str()),
            ("account_id", other_id.as_str()),
            ("role", "support"),
        ];
        let demote_first = [
            ("tenant_id", t.as_str()),
            ("account_id", first_s.as_str()),
            ("role", "support"),
        ];
        let (a, b) = tokio::join!(
            post(&app, &first, "/api/admin/team/role", &demote_other),
            post(&app, &second, "/api/admin/team/role", &demote_first),
        );
        let owners: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tenant_members WHERE tenant_id = $1 AND role = 'owner'",
        )
        .bind(tenant)
        .fetch_one(&app.pool)
        .await
        .expect("owners");
        assert_eq!(owners, 1, "round {round}: {a:?} {b:?}");
        let refused = [a.0, b.0].iter().filter(|s| **s >= 400).count();
        assert_eq!(
            refused, 1,
            "round {round}: exactly one refused: {a:?} {b:?}"
        );
    }
}

/// The trigger alone, without the HTTP layer's role check in the way: two
/// owners demoted at the same moment by the engine, 50 times; each time
/// exactly one demotion commits and the other is refused as the last
/// owner, never both (which would leave the tenant ownerless).
#[sqlx::test(migrations = "../migrations")]
async fn the_trigger_serialises_concurrent_demotions(pool: PgPool) {
    use engine::{
        team::{TeamError, change_role},
        tenants::{Role, TenantId},
    };
    let app = spawn_app(pool).await;
    let (tenant, _) = tenant_with_owner(&app, "first@acme.example").await;
    let first: Uuid =
        sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'first@acme.example'")
            .fetch_one(&app.pool)
            .await
            .expect("first");
    let second = app.create_account("second@acme.example", PASSWORD).await.0;
    let (tenant_id, actor) = (TenantId(tenant), engine::accounts::AccountId(first));
    for round in 0..50 {
        sqlx::query(
            "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner'), ($1, $3, 'owner')
             ON CONFLICT (tenant_id, account_id) DO UPDATE SET role = 'owner'",
        )
        .bind(tenant)
        .bind(first)
        .bind(second)
        .execute(&app.pool)
        .await
        .expect("both owners");
        let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(2));
        let demote = |member: Uuid| {
            let (pool, barrier) = (app.pool.clone(), barrier.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                change_role(
                    &pool,
                    tenant_id,
                    actor,
                    engine::accounts::AccountId(member),
                    Role::Admin,
                )
                .await
            })
        };
        let (a, b) = (demote(first), demote(second));
        let results = [a.await.expect("task"), b.await.expect("task")];
        let refused: Vec<&TeamError> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert_eq!(refused.len(), 1, "round {round}: {results:?}");
        assert!(
            matches!(refused[0], TeamError::LastOwner),
            "round {round}: {results:?}"
        );
        let owners: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM tenant_members WHERE tenant_id = $1 AND role = 'owner'",
        )
        .bind(tenant)
        .fetch_one(&app.pool)
        .await
        .expect("owners");
        assert_eq!(owners, 1, "round {round}");
    }
}

/// Tenant signup from the web: off by default; on, only for a verified
/// address, which becomes the new tenant's owner.
#[sqlx::test(migrations = "../migrations")]
async fn tenant_signup_follows_its_setting_and_needs_a_verified_address(pool: PgPool) {
    let closed = spawn_app(pool.clone()).await;
    closed.create_account("ada@example.com", PASSWORD).await;
    let ada = new_client();
    closed.login_as(&ada, "ada@example.com", PASSWORD).await;
    let form = [("name", "Ada's Academy"), ("slug", "ada-academy")];
    let (status, body) = post(&closed, &ada, "/api/team/create-tenant", &form).await;
    assert_eq!(
        (status, body["Refused"]["reason"].clone()),
        (403, "tenant_signup_closed".into())
    );
    drop(closed);

    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.tenants.self_signup = true;
    let app = spawn_app_with(pool, settings).await;
    let bob = new_client();
    app.create_unverified_account("bob@example.com", PASSWORD)
        .await;
    app.login_as(&bob, "bob@example.com", PASSWORD).await;
    let (status, body) = post(
        &app,
        &bob,
        "/api/team/create-tenant",
        &[("name", "Bob's"), ("slug", "bobs")],
    )
    .await;
    assert_eq!(
        (status, body["Refused"]["reason"].clone()),
        (403, "email_not_verified".into())
    );

    let ada = new_client();
    app.login_as(&ada, "ada@example.com", PASSWORD).await;
    let (status, body) = post(
        &app,
        &ada,
        "/api/team/create-tenant",
        &[("name", "Ada's Academy"), ("slug", "Bad Slug")],
    )
    .await;
    assert_eq!(
        (status, body["Invalid"]["field"].clone()),
        (422, "slug".into())
    );
    let (status, body) = post(&app, &ada, "/api/team/create-tenant", &form).await;
    assert!(status < 400, "{status} {body}");
    let owner: String = sqlx::query_scalar(
        "SELECT a.email FROM tenant_members m JOIN accounts a ON a.id = m.account_id
         JOIN tenants t ON t.id = m.tenant_id WHERE t.slug = 'ada-academy' AND m.role = 'owner'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("owner");
    assert_eq!(owner, "ada@example.com");
    let (status, body) = post(&app, &ada, "/api/team/create-tenant", &form).await;
    assert_eq!(
        (status, body["Invalid"]["field"].clone()),
        (422, "slug".into()),
        "taken"
    );
    let tenants: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(tenants, 1);
}

/// A team change holds the tenant's row only as far as the last-owner
/// rule needs (`FOR NO KEY UPDATE`): what references the tenant (a
/// binding's receipt, here a mail row) still commits while a demotion is
/// in flight. `FOR UPDATE` would make it wait (and time out).
#[sqlx::test(migrations = "../migrations")]
async fn a_team_change_does_not_block_what_references_the_tenant(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (tenant, _) = tenant_with_owner(&app, "first@acme.example").await;
    let second = app.create_account("second@acme.example", PASSWORD).await;
    sqlx::query(
        "INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, 'owner')",
    )
    .bind(tenant)
    .bind(second.0)
    .execute(&app.pool)
    .await
    .expect("second owner");
    let mut demotion = app.pool.begin().await.expect("begin");
    sqlx::query(
        "UPDATE tenant_members SET role = 'admin' WHERE tenant_id = $1 AND account_id = $2",
    )
    .bind(tenant)
    .bind(second.0)
    .execute(&mut *demotion)
    .await
    .expect("demote (the trigger locks the tenant)");
    let mut other = app.pool.acquire().await.expect("connection");
    sqlx::query("SET lock_timeout = '500ms'")
        .execute(&mut *other)
        .await
        .expect("lock timeout");
    let inserted = sqlx::query(
        "INSERT INTO mail_outbox (id, tenant_id, template, to_address, lang)
         VALUES ($1, $2, 'code_bound', 'learner@example.com', 'en')",
    )
    .bind(Uuid::now_v7())
    .bind(tenant)
    .execute(&mut *other)
    .await;
    assert!(inserted.is_ok(), "{inserted:?}");
    demotion.rollback().await.expect("rollback");
}
