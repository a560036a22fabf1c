//! Who may call what. Shared here: the world the tests act in (tenant B
//! with a share, batches, codes, learners, tokens, webhooks, invitations and
//! transfer requests; a member of each role; a learner, an admin of tenant
//! A and an anonymous visitor) and what tenant B holds for the calls.

mod api_routes;
mod pages;
mod server_functions;

use engine::tenants::{Role, TenantName, TenantSlug, ensure_tenant_with_owner};
use uuid::Uuid;

use crate::support::app::{TestApp, new_client};

const PASSWORD: &str = "correct horse battery";

/// What tenant B holds for the calls: a share, a batch, a bound code.
#[derive(Clone, Copy)]
struct Target {
    tenant: Uuid,
    share: Uuid,
    resource: Uuid,
    /// Removed by the control call (the others keep `resource`).
    doomed: Uuid,
    token: Uuid,
    /// An unused code (replaced by the control call).
    spare: Uuid,
    batch: Uuid,
    /// A batch of imported codes (its report).
    imported: Uuid,
    code: Uuid,
    /// `code` as its learner has it (leaked: `Target` stays `Copy`).
    plain: &'static str,
    /// A webhook endpoint with a dead-lettered delivery of `dead_event`.
    hook: Uuid,
    dead_event: Uuid,
    /// A webhook endpoint the control call disables.
    doomed_hook: Uuid,
    /// Tenant B's support member (the control call "changes" its role to
    /// the one it has).
    support: Uuid,
    /// A member the control call removes.
    doomed_member: Uuid,
    /// An open invitation the control call withdraws.
    invitation: Uuid,
    /// The learner bound to `code` (suspended by the control call).
    learner: Uuid,
    /// A second bound code, whose text leaked (revoked and replaced by the
    /// control call).
    leaked: Uuid,
    /// Two transfer requests their receiving accounts confirmed (one
    /// approved, one refused by the control call).
    transfer_to_approve: Uuid,
    transfer_to_refuse: Uuid,
    /// A mailable batch with two free codes (the control calls mail one,
    /// and send the other in place of `mailed`).
    mailable: Uuid,
    /// A code of `mailable` mailed to a recipient (mailed again, then
    /// revoked and replaced, by the control calls).
    mailed: Uuid,
    /// An order of B's, from the shop `shop`, with this id as its order id.
    order: Uuid,
    /// A Stripe shop of B's, and one of its products (this id as its
    /// product id) sold as `share`.
    shop: Uuid,
    product: Uuid,
}

impl Target {
    /// Every one of B's objects a call can name (all but the tenant), as
    /// the calls spell them.
    fn objects(self) -> Vec<String> {
        let mut objects: Vec<String> = [
            self.share,
            self.resource,
            self.doomed,
            self.token,
            self.spare,
            self.batch,
            self.imported,
            self.code,
            self.hook,
            self.dead_event,
            self.doomed_hook,
            self.support,
            self.doomed_member,
            self.invitation,
            self.learner,
            self.leaked,
            self.transfer_to_approve,
            self.transfer_to_refuse,
            self.mailable,
            self.mailed,
            self.order,
            self.shop,
            self.product,
        ]
        .iter()
        .map(Uuid::to_string)
        .collect();
        objects.push(self.plain.to_owned());
        objects
    }
}

struct World {
    /// `admin_a`'s own tenant.
    tenant_a: Uuid,
    tenant_b: Uuid,
    target: Target,
    anonymous: reqwest::Client,
    learner: reqwest::Client,
    admin_a: reqwest::Client,
    admin_b: reqwest::Client,
    /// Tenant B's members with each role (`admin_b` is an owner too).
    by_role: Vec<(Role, reqwest::Client)>,
}

async fn world(app: &TestApp) -> World {
    let admin_a = app.create_account("admin-a@example.com", PASSWORD).await;
    let admin_b = app.create_account("admin-b@example.com", PASSWORD).await;
    let learner = app.create_account("learner@example.com", PASSWORD).await;
    let tenant = |slug: &str| {
        (
            TenantSlug::parse(slug).expect("slug"),
            TenantName::parse(slug).expect("name"),
        )
    };
    let (slug_a, name_a) = tenant("tenant-a");
    let (slug_b, name_b) = tenant("tenant-b");
    let (tenant_a, _) = ensure_tenant_with_owner(&app.pool, &slug_a, &name_a, admin_a)
        .await
        .expect("tenant a");
    let (tenant_b, _) = ensure_tenant_with_owner(&app.pool, &slug_b, &name_b, admin_b)
        .await
        .expect("tenant b");
    // Tenant B's share, a batch of two codes, one bound to the learner.
    let share = engine::shares::create_share(
        &app.pool,
        tenant_b,
        admin_b,
        engine::shares::NewShare::parse(engine::shares::ShareInput {
            title: "Course B".into(),
            slug: Some("course-b".into()),
            description: None,
            status: Some("active".into()),
            per_learner_limit: None,
            quota: None,
            // A period, so that extending a learner's access is a call
            // that goes through.
            access_days: Some(Some(365)),
            valid_from: None,
            valid_until: None,
        })
        .expect("share"),
    )
    .await
    .expect("share");
    let keyring = crate::support::app::test_settings(&crate::support::app::redis_url())
        .keyring()
        .expect("keyring");
    let batch = engine::batches::issue_codes(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        &engine::batches::BatchRequest {
            share: share.id,
            count: 2,
            label: "b",
            expires_at: None,
            idempotency_key: None,
            progress: None,
            mailable: false,
        },
    )
    .await
    .expect("batch");
    let code = batch.codes[0].0;
    let plain: &'static str = Box::leak(batch.codes[0].1.display().into_boxed_str());
    let imported = engine::imports::import_codes(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        engine::imports::ImportRequest {
            share: share.id,
            label: "shop",
            format: engine::imports::ImportFormat::Foreign(
                engine::imports::Alphabet::letters_and_digits(),
            ),
            expires_at: None,
            lines: vec![(1, "SHOP-0001".to_owned())],
            progress: None,
        },
    )
    .await
    .expect("import")
    .batch_id;
    // In a batch of its own: `batches/revoke-unused` runs first.
    let spare = engine::batches::issue_codes(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        &engine::batches::BatchRequest {
            share: share.id,
            count: 1,
            label: "spare",
            expires_at: None,
            idempotency_key: None,
            progress: None,
            mailable: false,
        },
    )
    .await
    .expect("spare")
    .codes[0]
        .0;
    let mailable = engine::batches::issue_codes(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        &engine::batches::BatchRequest {
            share: share.id,
            count: 3,
            label: "to mail",
            expires_at: None,
            idempotency_key: None,
            progress: None,
            mailable: true,
        },
    )
    .await
    .expect("a mailable batch")
    .batch_id;
    engine::mailings::send(
        &app.pool,
        tenant_b,
        admin_b,
        &engine::mailings::SendRequest {
            batch: mailable,
            addresses: &["early-b@example.com".to_owned()],
            addressed: true,
            lang: None,
            dry_run: false,
        },
    )
    .await
    .expect("a code mailed");
    // Mailed an hour ago: a resend is not too soon (the control calls).
    sqlx::query("UPDATE mail_outbox SET created_at = now() - interval '1 hour' WHERE template = 'codes_sent'")
        .execute(&app.pool)
        .await
        .expect("the mail dated back");
    let mailed: Uuid = sqlx::query_scalar("SELECT code_id FROM code_mailings WHERE batch_id = $1")
        .bind(mailable)
        .fetch_one(&app.pool)
        .await
        .expect("the mailed code");
    let order = Uuid::now_v7();
    engine::orders::place(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        &engine::orders::OrderRequest {
            share: share.id,
            source: engine::orders::OrderSource::parse("shop").expect("source"),
            order_ref: engine::orders::OrderRef::parse(&order.to_string()).expect("order id"),
            buyer: engine::accounts::Email::parse("buyer-b@example.com").expect("email"),
            quantity: 1,
            addressed: None,
            mail: false,
            lang: None,
        },
    )
    .await
    .expect("an order");
    let shop = engine::shops::connect(
        &app.pool,
        tenant_b,
        admin_b,
        engine::shops::Provider::Stripe,
        "B's Stripe",
        Some("whsec_b_0123456789abcdef"),
    )
    .await
    .expect("a shop")
    .integration
    .id;
    let product = Uuid::now_v7();
    engine::shops::map_product(
        &app.pool,
        tenant_b,
        admin_b,
        shop,
        &product.to_string(),
        share.id,
    )
    .await
    .expect("a product");
    let (token, _) = engine::tokens::create(
        &app.pool,
        tenant_b,
        admin_b,
        "b's token",
        &[engine::tokens::Scope::Read],
        None,
        None,
    )
    .await
    .expect("token");
    let (resource, doomed) = (Uuid::now_v7(), Uuid::now_v7());
    for id in [resource, doomed] {
        engine::resources::add_resource(
            &app.pool,
            tenant_b,
            admin_b,
            share.id,
            id,
            "Notes",
            "text/html",
            0,
            "none",
            i64::MAX,
        )
        .await
        .expect("resource");
    }
    let mut hooks = Vec::new();
    for path in ["/live", "/doomed"] {
        let url = engine::webhooks::destination::EndpointUrl::parse(&format!(
            "https://hooks.example.com{path}"
        ))
        .expect("url");
        let (id, _) = engine::webhooks::endpoints::create_endpoint(
            &app.pool,
            tenant_b,
            admin_b,
            &url,
            &["batch.issued".to_owned()],
        )
        .await
        .expect("endpoint");
        hooks.push(id);
    }
    let dead_event: Uuid = sqlx::query_scalar(
        "INSERT INTO webhook_deliveries (tenant_id, endpoint_id, event_id, attempts, dead_at, last_error)
         SELECT tenant_id, $2, id, 8, now(), 'answered 500' FROM outbox WHERE tenant_id = $1 LIMIT 1
         RETURNING event_id",
    )
    .bind(tenant_b.0)
    .bind(hooks[0])
    .fetch_one(&app.pool)
    .await
    .expect("dead delivery");
    sqlx::query(
        "UPDATE auth_codes SET bound_principal = (SELECT id FROM accounts WHERE email = 'learner@example.com'),
                first_used_at = now() WHERE id = $1",
    )
    .bind(code)
    .execute(&app.pool)
    .await
    .expect("bind");
    // A second learner holds the batch's other code (its text leaked).
    let rightful = app.create_account("rightful@example.com", PASSWORD).await;
    let leaked = batch.codes[1].0;
    sqlx::query("UPDATE auth_codes SET bound_principal = $2, first_used_at = now() WHERE id = $1")
        .bind(leaked)
        .bind(rightful.0)
        .execute(&app.pool)
        .await
        .expect("bind the leaked code");
    // Two more learners each hold a code of a batch of its own, and each
    // asked to move it to another account, which confirmed.
    let moving = engine::batches::issue_codes(
        &app.pool,
        &keyring,
        tenant_b,
        admin_b,
        &engine::batches::BatchRequest {
            share: share.id,
            count: 2,
            label: "moving",
            expires_at: None,
            idempotency_key: None,
            progress: None,
            mailable: false,
        },
    )
    .await
    .expect("moving codes")
    .codes;
    let mut transfers = Vec::new();
    for (i, (moving_code, _)) in moving.iter().enumerate() {
        let holder = app
            .create_account(&format!("holder-{i}@example.com"), PASSWORD)
            .await;
        let other = app
            .create_account(&format!("other-{i}@example.com"), PASSWORD)
            .await;
        sqlx::query(
            "UPDATE auth_codes SET bound_principal = $2, first_used_at = now() WHERE id = $1",
        )
        .bind(moving_code)
        .bind(holder.0)
        .execute(&app.pool)
        .await
        .expect("bind a moving code");
        let id = Uuid::now_v7();
        sqlx::query(
            "INSERT INTO transfer_requests (tenant_id, id, share_id, code_id, from_account, to_email,
                 to_account, status, digest, link_expires_at, confirmed_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'awaiting_admin', $8, now() + interval '7 days', now())",
        )
        .bind(tenant_b.0)
        .bind(id)
        .bind(share.id.0)
        .bind(moving_code)
        .bind(holder.0)
        .bind(format!("other-{i}@example.com"))
        .bind(other.0)
        .bind(id.as_bytes().to_vec())
        .execute(&app.pool)
        .await
        .expect("a confirmed transfer request");
        transfers.push(id);
    }
    // The learner opened the course once (so stays the tenant's learner
    // after an unbind).
    sqlx::query(
        "INSERT INTO access_records (tenant_id, id, share_id, code_id, principal_id, resource_id, request_id, bound_now, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'first', true, now())",
    )
    .bind(tenant_b.0)
    .bind(Uuid::now_v7())
    .bind(share.id.0)
    .bind(code)
    .bind(learner.0)
    .bind(resource)
    .execute(&app.pool)
    .await
    .expect("an access");
    // Tenant B's team: a second owner (so that an owner may leave), an
    // admin, a support member, one to remove, and an open invitation.
    let mut members = Vec::new();
    for (email, role) in [
        ("owner-b@example.com", "owner"),
        ("role-admin@example.com", "admin"),
        ("role-support@example.com", "support"),
        ("doomed@example.com", "support"),
    ] {
        let id = app.create_account(email, PASSWORD).await;
        sqlx::query("INSERT INTO tenant_members (tenant_id, account_id, role) VALUES ($1, $2, $3)")
            .bind(tenant_b.0)
            .bind(id.0)
            .bind(role)
            .execute(&app.pool)
            .await
            .expect("member");
        members.push(id.0);
    }
    let invitation = engine::team::invite(
        &app.pool,
        &crate::support::mail::link_key(),
        tenant_b,
        admin_b,
        &engine::accounts::Email::parse("invited@example.com").expect("email"),
        Role::Admin,
        model::Lang::En,
    )
    .await
    .expect("invitation");
    let world = World {
        tenant_a: tenant_a.0,
        tenant_b: tenant_b.0,
        target: Target {
            tenant: tenant_b.0,
            share: share.id.0,
            resource,
            doomed,
            token,
            spare,
            batch: batch.batch_id,
            mailable,
            mailed,
            order,
            shop,
            product,
            imported,
            code,
            plain,
            hook: hooks[0],
            dead_event,
            doomed_hook: hooks[1],
            support: members[2],
            doomed_member: members[3],
            invitation,
            learner: learner.0,
            leaked,
            transfer_to_approve: transfers[0],
            transfer_to_refuse: transfers[1],
        },
        anonymous: new_client(),
        learner: new_client(),
        admin_a: new_client(),
        admin_b: new_client(),
        by_role: vec![
            (Role::Support, new_client()),
            (Role::Admin, new_client()),
            (Role::Owner, new_client()),
        ],
    };
    for ((_, client), email) in world.by_role.iter().zip([
        "role-support@example.com",
        "role-admin@example.com",
        "owner-b@example.com",
    ]) {
        app.login_as(client, email, PASSWORD).await;
    }
    app.login_as(&world.learner, "learner@example.com", PASSWORD)
        .await;
    app.login_as(&world.admin_a, "admin-a@example.com", PASSWORD)
        .await;
    app.login_as(&world.admin_b, "admin-b@example.com", PASSWORD)
        .await;
    world
}
