//! Teams: an owner invites by mail, the invited address (and only it)
//! accepts once, the role then limits what the member may do; a tenant
//! always keeps an owner (however many change at once); tenant signup from
//! the web follows its setting; a tenant suspends one of its learners.

use engine::tenants::{TenantName, TenantSlug, ensure_tenant_with_owner};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::{TestApp, new_client, spawn_app, spawn_app_with};
use crate::support::mail::{MAIL_WAIT, mail_settings, token_of};

const PASSWORD: &str = "correct horse battery";

/// A tenant whose owner is signed in with the returned client.
async fn tenant_with_owner(app: &TestApp, email: &str) -> (Uuid, reqwest::Client) {
    let owner = app.create_account(email, PASSWORD).await;
    let (tenant, _) = ensure_tenant_with_owner(
        &app.pool,
        &TenantSlug::parse("acme").expect("slug"),
        &TenantName::parse("Acme Courses").expect("name"),
        owner,
    )
    .await
    .expect("tenant");
    let client = new_client();
    app.login_as(&client, email, PASSWORD).await;
    (tenant.0, client)
}

async fn post(
    app: &TestApp,
    client: &reqwest::Client,
    path: &str,
    form: &[(&str, &str)],
) -> (u16, Value) {
    let response = app.post_form_as(client, path, form).await;
    let status = response.status().as_u16();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body)
}

async fn roles(app: &TestApp, tenant: Uuid) -> Vec<(String, String)> {
    sqlx::query_as(
        "SELECT a.email, m.role FROM tenant_members m JOIN accounts a ON a.id = m.account_id
         WHERE m.tenant_id = $1 ORDER BY a.email",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("roles")
}

/// Invite → the mail → accept (by the invited address only, once) → the
/// role's limits: support reads the codes but cannot issue them.
#[sqlx::test(migrations = "../migrations")]
async fn an_invited_support_member_joins_reads_and_cannot_issue(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let (tenant, owner) = tenant_with_owner(&app, "owner@acme.example").await;
    let t = tenant.to_string();
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "Sam@Example.com"),
            ("role", "support"),
        ],
    )
    .await;
    assert!(status < 400, "{status} {body}");
    let mail = sink.wait_for("sam@example.com", "invited", MAIL_WAIT).await;
    assert!(mail.subject.contains("Acme Courses"), "{}", mail.subject);
    assert!(mail.text.contains("support (read-only)"), "{}", mail.text);
    let token = token_of(&mail.link("/invitation").expect("link"));

    // Someone else signed in cannot use it, and it stays open.
    app.create_account("mallory@example.com", PASSWORD).await;
    let mallory = new_client();
    app.login_as(&mallory, "mallory@example.com", PASSWORD)
        .await;
    let (status, body) = post(&app, &mallory, "/api/team/accept", &[("token", &token)]).await;
    assert_eq!(status, 403, "{body}");
    assert_eq!(body["Refused"]["reason"], "invitation_for_another_address");
    // Signed out: sign in first.
    let (status, _) = post(
        &app,
        &new_client(),
        "/api/team/accept",
        &[("token", &token)],
    )
    .await;
    assert_eq!(status, 401);

    // Sam registers with the address (unverified) and accepts: a member
    // with the invited role, the address verified by the link.
    let sam = new_client();
    let registered = app
        .post_form_as(
            &sam,
            "/api/auth/register",
            &[
                ("email", "sam@example.com"),
                ("display_name", "Sam"),
                ("password", PASSWORD),
                ("password_confirm", PASSWORD),
            ],
        )
        .await;
    assert!(registered.status().as_u16() < 400);
    let (status, body) = post(&app, &sam, "/api/team/accept", &[("token", &token)]).await;
    assert!(status < 400, "{status} {body}");
    assert_eq!(
        roles(&app, tenant).await,
        vec![
            ("owner@acme.example".to_owned(), "owner".to_owned()),
            ("sam@example.com".to_owned(), "support".to_owned())
        ]
    );
    let verified: bool = sqlx::query_scalar(
        "SELECT email_verified_at IS NOT NULL FROM accounts WHERE email = 'sam@example.com'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("account");
    assert!(verified);
    let (status, body) = post(&app, &sam, "/api/team/accept", &[("token", &token)]).await;
    assert_eq!(
        (status, body["Refused"]["reason"].clone()),
        (410, "invitation_invalid".into())
    );

    // What support may do: read, never change.
    let share = engine::shares::create_share(
        &app.pool,
        engine::tenants::TenantId(tenant),
        engine::accounts::AccountId(
            sqlx::query_scalar("SELECT id FROM accounts WHERE email = 'owner@acme.example'")
                .fetch_one(&app.pool)
                .await
                .expect("owner"),
        ),
        engine::shares::NewShare::parse(engine::shares::ShareInput {
            title: "Course".into(),
            slug: Some("course".into()),
            description: None,
            status: Some("active".into()),
            per_learner_limit: None,
            quota: None,
            access_days: None,
            valid_from: None,
            valid_until: None,
        })
        .expect("share"),
    )
    .await
    .expect("share");
    let s = share.id.0.to_string();
    let codes = app
        .get_as(
            &sam,
            &format!("/api/admin/codes?tenant_id={t}&share_id={s}"),
        )
        .await;
    assert_eq!(codes.status(), 200, "support reads the code table");
    let (status, _) = post(
        &app,
        &sam,
        "/api/admin/codes/issue",
        &[
            ("tenant_id", &t),
            ("share_id", &s),
            ("count", "2"),
            ("label", "x"),
        ],
    )
    .await;
    assert_eq!(status, 403, "support cannot issue");
    let issued: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(issued, 0);
    let audit: Vec<String> = sqlx::query_scalar(
        "SELECT action FROM audit_log WHERE tenant_id = $1 AND action LIKE 'member.%' ORDER BY created_at",
    )
    .bind(tenant)
    .fetch_all(&app.pool)
    .await
    .expect("audit");
    assert_eq!(audit, vec!["member.invited", "member.joined"]);
}

/// An invitation in the invitee's own language when they have an account,
/// expired after 7 days, replaced by a newer one, or withdrawn: the link
/// no longer works.
#[sqlx::test(migrations = "../migrations")]
async fn invitations_expire_are_replaced_and_can_be_withdrawn(pool: PgPool) {
    let sink = harness::smtp::SmtpSink::start().await;
    let app = spawn_app_with(pool, mail_settings(&sink)).await;
    let (tenant, owner) = tenant_with_owner(&app, "owner@acme.example").await;
    let t = tenant.to_string();
    app.create_account("li@example.com", PASSWORD).await;
    let li = new_client();
    app.login_as(&li, "li@example.com", PASSWORD).await;
    // Li reads Chinese (as a sign-in from a Chinese browser would record).
    sqlx::query("UPDATE accounts SET lang = 'zh-CN' WHERE email = 'li@example.com'")
        .execute(&app.pool)
        .await
        .expect("lang");
    let invite = |role: &'static str| {
        let (app, owner, t) = (&app, &owner, t.clone());
        async move {
            post(
                app,
                owner,
                "/api/admin/team/invite",
                &[
                    ("tenant_id", &t),
                    ("email", "li@example.com"),
                    ("role", role),
                ],
            )
            .await
            .0
        }
    };
    assert!(invite("admin").await < 400);
    let first = sink.wait_for("li@example.com", "邀请你", MAIL_WAIT).await;
    assert!(first.text.contains("管理员"), "in Chinese: {}", first.text);
    let lifetime: f64 = sqlx::query_scalar(
        "SELECT extract(epoch FROM expires_at - created_at)::float8 FROM tenant_invitations",
    )
    .fetch_one(&app.pool)
    .await
    .expect("invitation");
    assert_eq!(lifetime, 7.0 * 86_400.0);

    // A newer invitation replaces it.
    assert!(invite("support").await < 400);
    let mails = sink.wait_for_count(2, MAIL_WAIT).await;
    let (old, new) = (
        token_of(&first.link("/invitation").expect("link")),
        token_of(
            &mails
                .iter()
                .find(|m| m.message_id != first.message_id)
                .and_then(|m| m.link("/invitation"))
                .expect("second"),
        ),
    );
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &old)]).await;
    assert_eq!(status, 410, "replaced");

    // Expired.
    sqlx::query("UPDATE tenant_invitations SET expires_at = now() - interval '1 second' WHERE accepted_at IS NULL AND revoked_at IS NULL")
        .execute(&app.pool)
        .await
        .expect("age");
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &new)]).await;
    assert_eq!(status, 410, "expired");

    // Withdrawn.
    assert!(invite("support").await < 400);
    let third = sink.wait_for_count(3, MAIL_WAIT).await;
    let newest = third
        .iter()
        .filter_map(|m| m.link("/invitation").map(|l| token_of(&l)))
        .find(|tok| *tok != old && *tok != new)
        .expect("third");
    let id: Uuid = sqlx::query_scalar(
        "SELECT id FROM tenant_invitations WHERE accepted_at IS NULL AND revoked_at IS NULL",
    )
    .fetch_one(&app.pool)
    .await
    .expect("open");
    let (status, _) = post(
        &app,
        &owner,
        "/api/admin/team/invitations/revoke",
        &[("tenant_id", &t), ("invitation_id", &id.to_string())],
    )
    .await;
    assert!(status < 400);
    let (status, _) = post(&app, &li, "/api/team/accept", &[("token", &newest)]).await;
    assert_eq!(status, 410, "withdrawn");
    assert_eq!(roles(&app, tenant).await.len(), 1, "nobody joined");

    // Bad input changes nothing.
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "li@example.com"),
            ("role", "superuser"),
        ],
    )
    .await;
    assert_eq!(status, 422);
    assert_eq!(body["Invalid"]["field"], "role");
    let (status, body) = post(
        &app,
        &owner,
        "/api/admin/team/invite",
        &[
            ("tenant_id", &t),
            ("email", "owner@acme.example"),
            ("role", "admin"),
        ],
    )
    .await;
    assert_eq!(status, 409, "already a member: {body}");
}

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
