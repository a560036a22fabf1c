//! Learners and admins of other tenants never reach an admin server
//! function, and their attempts change nothing; in the tenant itself, each
//! role reaches exactly the functions its permissions allow
//! (`model::Role::allows`), every function checked for every role.

use std::collections::BTreeSet;

use engine::tenants::{Permission, Role};
use reqwest::Method;
use sqlx::PgPool;
use uuid::Uuid;

use super::{Target, world};
use crate::support::app::{TestApp, spawn_app};

/// What each admin server function needs: the one table this test holds
/// the server to. Every registered function must be here.
fn permission_of(path: &str) -> Permission {
    use Permission::*;
    match path {
        "/api/admin/tenant/overview"
        | "/api/admin/dashboard"
        | "/api/admin/share"
        | "/api/admin/codes"
        | "/api/admin/codes/find"
        | "/api/admin/codes/import-report"
        | "/api/admin/learners"
        | "/api/admin/audit"
        | "/api/admin/team"
        | "/api/admin/team/leave"
        | "/api/admin/transfers"
        | "/api/admin/mailings"
        | "/api/admin/sales" => ViewConsole,
        "/api/admin/share/create"
        | "/api/admin/share/update"
        | "/api/admin/codes/issue"
        | "/api/admin/codes/issued"
        | "/api/admin/codes/progress"
        | "/api/admin/codes/replace"
        | "/api/admin/codes/revoke"
        | "/api/admin/codes/revoke-and-replace"
        | "/api/admin/codes/unbind"
        | "/api/admin/batches/revoke-unused"
        | "/api/admin/codes/expiry"
        | "/api/admin/batches/expiry"
        | "/api/admin/access/extend"
        | "/api/admin/access/extend-all"
        | "/api/admin/resources/rename"
        | "/api/admin/resources/move"
        | "/api/admin/resources/delete"
        | "/api/admin/learners/suspend"
        | "/api/admin/transfers/approve"
        | "/api/admin/transfers/refuse"
        | "/api/admin/mailings/send"
        | "/api/admin/mailings/resend"
        | "/api/admin/mailings/revoke-and-resend"
        | "/api/admin/sales/refund-policy" => ManageCourses,
        "/api/admin/tokens"
        | "/api/admin/tokens/create"
        | "/api/admin/tokens/revoke"
        | "/api/admin/webhooks"
        | "/api/admin/webhooks/create"
        | "/api/admin/webhooks/disable"
        | "/api/admin/webhooks/redeliver"
        | "/api/admin/shops"
        | "/api/admin/shops/connect"
        | "/api/admin/shops/secret"
        | "/api/admin/shops/disable"
        | "/api/admin/shops/products/map"
        | "/api/admin/shops/products/forget" => ManageIntegrations,
        "/api/admin/team/invite"
        | "/api/admin/team/role"
        | "/api/admin/team/remove"
        | "/api/admin/team/invitations/revoke"
        | "/api/admin/tenant/settings"
        | "/api/admin/tenant/branding"
        | "/api/admin/tenant/logo/remove" => ManageTeam,
        other => panic!("{other}: say which permission it needs"),
    }
}

/// Every admin server function with valid arguments for `t`. The test
/// below fails when a registered `/api/admin/` endpoint is missing here, so
/// new functions are covered as they are added.
fn admin_calls(t: Target) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let resource = ("resource_id", t.resource.to_string());
    let (tenant, share, batch, code) = (
        ("tenant_id", t.tenant.to_string()),
        ("share_id", t.share.to_string()),
        ("batch_id", t.batch.to_string()),
        ("code_id", t.code.to_string()),
    );
    let field = |name: &'static str, value: &str| (name, value.to_owned());
    vec![
        ("/api/admin/tenant/overview", vec![tenant.clone()]),
        ("/api/admin/dashboard", vec![tenant.clone()]),
        (
            "/api/admin/share/create",
            vec![tenant.clone(), field("title", "Another course")],
        ),
        ("/api/admin/share", vec![tenant.clone(), share.clone()]),
        (
            "/api/admin/share/update",
            vec![
                tenant.clone(),
                share.clone(),
                field("title", "Renamed"),
                // Codes exist: the link name stays.
                field("slug", "course-b"),
                field("description", ""),
                field("status", "active"),
                field("valid_from", ""),
                field("valid_until", ""),
                field("per_learner_limit", ""),
                field("quota", ""),
            ],
        ),
        (
            "/api/admin/codes/issue",
            vec![
                tenant.clone(),
                share.clone(),
                field("count", "2"),
                field("label", "x"),
            ],
        ),
        (
            "/api/admin/codes/issued",
            vec![tenant.clone(), share.clone(), batch.clone()],
        ),
        ("/api/admin/codes", vec![tenant.clone(), share.clone()]),
        (
            "/api/admin/codes/import-report",
            vec![
                tenant.clone(),
                share.clone(),
                ("batch_id", t.imported.to_string()),
            ],
        ),
        (
            "/api/admin/codes/find",
            vec![tenant.clone(), field("code", t.plain)],
        ),
        (
            "/api/admin/codes/replace",
            vec![tenant.clone(), ("code_id", t.spare.to_string())],
        ),
        (
            "/api/admin/codes/revoke",
            vec![tenant.clone(), code.clone(), field("confirm", "yes")],
        ),
        (
            "/api/admin/codes/revoke-and-replace",
            vec![
                tenant.clone(),
                ("code_id", t.leaked.to_string()),
                field("reason", "posted on a forum"),
                field("confirm", "yes"),
            ],
        ),
        (
            "/api/admin/codes/unbind",
            vec![
                tenant.clone(),
                code,
                field("reason", "test"),
                field("after", "usable"),
                field("confirm", "yes"),
            ],
        ),
        (
            "/api/admin/batches/revoke-unused",
            vec![tenant.clone(), batch.clone(), field("confirm", "yes")],
        ),
        (
            "/api/admin/batches/expiry",
            vec![
                tenant.clone(),
                batch,
                field("expires_at", "2099-01-01T00:00"),
            ],
        ),
        (
            // First (paths run in order): `code` is still bound.
            "/api/admin/access/extend",
            vec![
                tenant.clone(),
                ("code_id", t.code.to_string()),
                field("until", "2099-01-01T00:00"),
            ],
        ),
        (
            "/api/admin/access/extend-all",
            vec![
                tenant.clone(),
                share.clone(),
                field("until", "2099-01-01T00:00"),
            ],
        ),
        (
            // Before `codes/replace` (paths run in order): still unused.
            "/api/admin/codes/expiry",
            vec![
                tenant.clone(),
                ("code_id", t.spare.to_string()),
                field("expires_at", "2099-01-01T00:00"),
            ],
        ),
        ("/api/admin/learners", vec![tenant.clone(), share.clone()]),
        (
            "/api/admin/resources/rename",
            vec![
                tenant.clone(),
                share.clone(),
                resource.clone(),
                field("title", "New"),
            ],
        ),
        (
            "/api/admin/resources/move",
            vec![
                tenant.clone(),
                share.clone(),
                resource.clone(),
                field("direction", "up"),
            ],
        ),
        (
            "/api/admin/resources/delete",
            vec![
                tenant.clone(),
                share.clone(),
                ("resource_id", t.doomed.to_string()),
            ],
        ),
        ("/api/admin/tokens", vec![tenant.clone()]),
        ("/api/admin/transfers", vec![tenant.clone()]),
        (
            "/api/admin/transfers/approve",
            vec![
                tenant.clone(),
                ("transfer_id", t.transfer_to_approve.to_string()),
            ],
        ),
        (
            "/api/admin/transfers/refuse",
            vec![
                tenant.clone(),
                ("transfer_id", t.transfer_to_refuse.to_string()),
                field("reason", "cannot verify"),
            ],
        ),
        (
            "/api/admin/tokens/create",
            vec![tenant.clone(), field("name", "ci"), field("read", "on")],
        ),
        (
            "/api/admin/tokens/revoke",
            vec![
                tenant.clone(),
                ("token_id", t.token.to_string()),
                field("confirm", "yes"),
            ],
        ),
        (
            "/api/admin/codes/progress",
            vec![tenant.clone(), ("ticket", Uuid::new_v4().to_string())],
        ),
        ("/api/admin/webhooks", vec![tenant.clone()]),
        (
            "/api/admin/webhooks/create",
            vec![
                tenant.clone(),
                field("url", "https://hooks.example.com/b"),
                field("code_bound", "on"),
            ],
        ),
        (
            "/api/admin/webhooks/disable",
            vec![
                tenant.clone(),
                ("endpoint_id", t.doomed_hook.to_string()),
                field("confirm", "yes"),
            ],
        ),
        (
            "/api/admin/webhooks/redeliver",
            vec![
                tenant.clone(),
                ("endpoint_id", t.hook.to_string()),
                ("event_id", t.dead_event.to_string()),
            ],
        ),
        ("/api/admin/team", vec![tenant.clone()]),
        (
            "/api/admin/team/invite",
            vec![
                tenant.clone(),
                field("email", "newcomer@example.com"),
                field("role", "support"),
            ],
        ),
        (
            "/api/admin/team/role",
            vec![
                tenant.clone(),
                ("account_id", t.support.to_string()),
                field("role", "support"),
            ],
        ),
        (
            "/api/admin/team/remove",
            vec![tenant.clone(), ("account_id", t.doomed_member.to_string())],
        ),
        (
            "/api/admin/team/invitations/revoke",
            vec![tenant.clone(), ("invitation_id", t.invitation.to_string())],
        ),
        (
            "/api/admin/team/leave",
            vec![tenant.clone(), field("confirm", "yes")],
        ),
        (
            "/api/admin/tenant/settings",
            vec![tenant.clone(), field("require_verified_email", "on")],
        ),
        (
            "/api/admin/tenant/branding",
            vec![
                tenant.clone(),
                field("name", "Tenant B"),
                field("accent", "#2e7d32"),
                field("support_email", "help@b.example.com"),
            ],
        ),
        ("/api/admin/tenant/logo/remove", vec![tenant.clone()]),
        (
            "/api/admin/learners/suspend",
            vec![
                tenant.clone(),
                ("account_id", t.learner.to_string()),
                field("suspend", "yes"),
            ],
        ),
        (
            "/api/admin/mailings",
            vec![
                tenant.clone(),
                share.clone(),
                ("batch_id", t.mailable.to_string()),
            ],
        ),
        (
            "/api/admin/mailings/send",
            vec![
                tenant.clone(),
                share.clone(),
                ("batch_id", t.mailable.to_string()),
                field("addresses", "later-b@example.com"),
                field("addressed", "yes"),
                field("lang", ""),
                field("intent", "send"),
            ],
        ),
        (
            "/api/admin/mailings/resend",
            vec![tenant.clone(), ("code_id", t.mailed.to_string())],
        ),
        (
            "/api/admin/mailings/revoke-and-resend",
            vec![
                tenant.clone(),
                ("code_id", t.mailed.to_string()),
                field("confirm", "yes"),
            ],
        ),
        ("/api/admin/shops", vec![tenant.clone()]),
        (
            "/api/admin/shops/connect",
            vec![
                tenant.clone(),
                field("provider", "gumroad"),
                field("name", "Another shop"),
                field("secret", ""),
            ],
        ),
        (
            "/api/admin/shops/secret",
            vec![
                tenant.clone(),
                ("shop_id", t.shop.to_string()),
                field("secret", "whsec_rotated_0123456789abcdef"),
            ],
        ),
        (
            "/api/admin/shops/disable",
            vec![
                tenant.clone(),
                ("shop_id", t.shop.to_string()),
                field("confirm", "yes"),
            ],
        ),
        (
            "/api/admin/shops/products/map",
            vec![
                tenant.clone(),
                ("shop_id", t.shop.to_string()),
                ("product", t.product.to_string()),
                share.clone(),
            ],
        ),
        (
            "/api/admin/shops/products/forget",
            vec![
                tenant.clone(),
                ("shop_id", t.shop.to_string()),
                ("product", t.product.to_string()),
            ],
        ),
        ("/api/admin/sales", vec![tenant.clone(), share.clone()]),
        (
            "/api/admin/sales/refund-policy",
            vec![
                tenant.clone(),
                share.clone(),
                field("action", "revoke"),
                field("bound_grace_hours", "24"),
            ],
        ),
        ("/api/admin/audit", vec![tenant]),
    ]
}

/// The registered paths in the order the tests call them: leaving the
/// team last (a caller who left can call nothing more).
fn in_calling_order(registered: &BTreeSet<(String, Method)>) -> Vec<(String, Method)> {
    let (leave, mut rest): (Vec<_>, Vec<_>) = registered
        .iter()
        .cloned()
        .partition(|(path, _)| path == "/api/admin/team/leave");
    rest.extend(leave);
    rest
}

fn args_for(t: Target, path: &str) -> Vec<(&'static str, String)> {
    admin_calls(t)
        .into_iter()
        .find(|(p, _)| *p == path)
        .map(|(_, a)| a)
        .expect("listed in admin_calls()")
}

async fn call(
    app: &TestApp,
    client: &reqwest::Client,
    method: &Method,
    path: &str,
    args: &[(&str, String)],
) -> u16 {
    let url = format!("{}{}", app.address, path);
    let request = if *method == Method::GET {
        client.get(url).query(args)
    } else {
        client.post(url).form(args)
    };
    request.send().await.expect("request").status().as_u16()
}

/// An object like `value` that exists nowhere: a fresh id, or a fresh
/// well-formed code.
fn elsewhere(value: &str) -> String {
    if value.parse::<Uuid>().is_ok() {
        Uuid::new_v4().to_string()
    } else {
        engine::codes::PlainCode::generate().display()
    }
}

/// Like [`call`], with the answer's text.
async fn call_reading(
    app: &TestApp,
    client: &reqwest::Client,
    method: &Method,
    path: &str,
    args: &[(&str, String)],
) -> (u16, String) {
    let url = format!("{}{}", app.address, path);
    let request = if *method == Method::GET {
        client.get(url).query(args)
    } else {
        client.post(url).form(args)
    };
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.text().await.expect("body"))
}

/// A digest of every row the calls could have touched.
pub(super) async fn snapshot(pool: &PgPool) -> String {
    sqlx::query_scalar(
        "SELECT concat_ws('|',
            (SELECT md5(coalesce(string_agg(t::text, ',' ORDER BY t::text), '')) FROM tenants t),
            (SELECT md5(coalesce(string_agg(a::text, ',' ORDER BY a::text), '')) FROM accounts a),
            (SELECT md5(coalesce(string_agg(m::text, ',' ORDER BY m::text), '')) FROM tenant_members m),
            (SELECT md5(coalesce(string_agg(s::text, ',' ORDER BY s::text), '')) FROM shares s),
            (SELECT md5(coalesce(string_agg(c::text, ',' ORDER BY c::text), '')) FROM auth_codes c),
            (SELECT md5(coalesce(string_agg(r::text, ',' ORDER BY r::text), '')) FROM resources r),
            -- A token's use is not a change (the API door's refusals use A's).
            (SELECT md5(coalesce(string_agg((to_jsonb(k) - 'last_used_at')::text, ',' ORDER BY k.id), '')) FROM api_tokens k),
            (SELECT md5(coalesce(string_agg(w::text, ',' ORDER BY w::text), '')) FROM webhook_endpoints w),
            (SELECT md5(coalesce(string_agg(d::text, ',' ORDER BY d::text), '')) FROM webhook_deliveries d),
            (SELECT md5(coalesce(string_agg(l::text, ',' ORDER BY l::text), '')) FROM audit_log l),
            (SELECT md5(coalesce(string_agg(i::text, ',' ORDER BY i::text), '')) FROM tenant_invitations i),
            (SELECT md5(coalesce(string_agg(s::text, ',' ORDER BY s::text), '')) FROM suspended_learners s),
            (SELECT md5(coalesce(string_agg(x::text, ',' ORDER BY x::text), '')) FROM transfer_requests x),
            (SELECT md5(coalesce(string_agg(o::text, ',' ORDER BY o::text), '')) FROM orders o),
            (SELECT md5(coalesce(string_agg(m::text, ',' ORDER BY m::text), '')) FROM code_mailings m),
            (SELECT md5(coalesce(string_agg(p::text, ',' ORDER BY p::text), '')) FROM refund_policies p),
            (SELECT md5(coalesce(string_agg(i::text, ',' ORDER BY i::text), '')) FROM shop_integrations i),
            (SELECT md5(coalesce(string_agg(p::text, ',' ORDER BY p::text), '')) FROM shop_products p),
            (SELECT md5(coalesce(string_agg(e::text, ',' ORDER BY e::text), '')) FROM shop_events e),
            -- Which mails were queued (the relay updates the rows as it sends).
            (SELECT md5(coalesce(string_agg(o.id::text, ',' ORDER BY o.id), '')) FROM mail_outbox o))",
    )
    .fetch_one(pool)
    .await
    .expect("snapshot")
}

#[sqlx::test(migrations = "../migrations")]
async fn every_admin_server_function_refuses_outsiders(pool: PgPool) {
    let app = spawn_app(pool).await;
    let w = world(&app).await;

    let registered: BTreeSet<(String, Method)> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(path, _)| path.starts_with("/api/admin/"))
        .map(|(path, method)| (path.to_owned(), method))
        .collect();
    let listed: BTreeSet<&str> = admin_calls(w.target).iter().map(|(p, _)| *p).collect();
    let registered_paths: BTreeSet<&str> = registered.iter().map(|(p, _)| p.as_str()).collect();
    assert!(
        !registered_paths.is_empty(),
        "admin server functions are registered"
    );
    assert_eq!(
        registered_paths, listed,
        "every admin server function is in admin_calls()"
    );

    for (path, _) in &registered {
        permission_of(path);
    }
    let before = snapshot(&app.pool).await;
    for (path, method) in &registered {
        let args = args_for(w.target, path);
        assert_eq!(
            call(&app, &w.anonymous, method, path, &args).await,
            401,
            "anonymous {path}"
        );
        assert_eq!(
            call(&app, &w.learner, method, path, &args).await,
            403,
            "learner {path}"
        );
        assert_eq!(
            call(&app, &w.admin_a, method, path, &args).await,
            403,
            "other tenant's admin {path}"
        );
        // The permission is checked before anything about the request
        // itself (an unconfirmed action would otherwise answer 422 and say
        // that the code exists and is bound).
        let unconfirmed: Vec<(&str, String)> = args
            .iter()
            .filter(|(k, _)| *k != "confirm")
            .cloned()
            .collect();
        assert_eq!(
            call(&app, &w.admin_a, method, path, &unconfirmed).await,
            403,
            "other tenant's admin, unconfirmed {path}"
        );
        // A tenant that does not exist is refused the same way (no probing).
        let missing: Vec<(&str, String)> = args
            .iter()
            .map(|(k, v)| {
                (
                    *k,
                    if *k == "tenant_id" {
                        Uuid::new_v4().to_string()
                    } else {
                        v.clone()
                    },
                )
            })
            .collect();
        assert_eq!(
            call(&app, &w.admin_a, method, path, &missing).await,
            403,
            "unknown tenant {path}"
        );
    }
    assert_eq!(
        snapshot(&app.pool).await,
        before,
        "refused calls changed nothing"
    );

    // Control: the tenant's own owner gets through, so the refusals above
    // are authorisation, not broken calls.
    for (path, method) in in_calling_order(&registered) {
        let args = args_for(w.target, &path);
        let status = call(&app, &w.admin_b, &method, &path, &args).await;
        assert!((200..400).contains(&status), "own owner {path}: {status}");
    }
}

/// The classic mix-up: an admin of tenant A, in A's own tenant (so every
/// check on the tenant passes), naming B's objects (a share, a batch, a
/// code or its text, a resource, a token, a webhook, a member, an
/// invitation, a learner, a transfer). Every registered function that
/// names one is refused, says nothing of it, and changes nothing.
/// Generated from the registry: a new function is tried here once it is
/// in `admin_calls()` (which the test above requires).
#[sqlx::test(migrations = "../migrations")]
async fn an_admin_in_her_own_tenant_cannot_reach_another_tenants_objects(pool: PgPool) {
    let app = spawn_app(pool).await;
    let w = world(&app).await;
    let registered: BTreeSet<(String, Method)> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(path, _)| path.starts_with("/api/admin/"))
        .map(|(path, method)| (path.to_owned(), method))
        .collect();
    let objects = w.target.objects();
    let before = snapshot(&app.pool).await;
    let mut tried = Vec::new();
    for (path, method) in &registered {
        let args: Vec<(&str, String)> = args_for(w.target, path)
            .into_iter()
            .map(|(k, v)| {
                if k == "tenant_id" {
                    (k, w.tenant_a.to_string())
                } else {
                    (k, v)
                }
            })
            .collect();
        if !args
            .iter()
            .any(|(k, v)| *k != "tenant_id" && objects.contains(v))
        {
            continue;
        }
        let (status, body) = call_reading(&app, &w.admin_a, method, path, &args).await;
        assert!(
            (400..500).contains(&status),
            "{path} with B's objects in A's tenant: {status} {body}"
        );
        // No oracle: the answer is the one for objects that exist nowhere.
        let nowhere: Vec<(&str, String)> = args
            .iter()
            .map(|(k, v)| {
                if *k != "tenant_id" && objects.contains(v) {
                    (*k, elsewhere(v))
                } else {
                    (*k, v.clone())
                }
            })
            .collect();
        assert_eq!(
            call_reading(&app, &w.admin_a, method, path, &nowhere).await,
            (status, body.clone()),
            "{path}: B's objects are told apart from objects that do not exist"
        );
        for object in &objects {
            assert!(
                !body.contains(object.as_str()),
                "{path} answered with B's {object}: {body}"
            );
        }
        tried.push(path.clone());
    }
    assert!(
        tried.len() >= 20,
        "only {} functions name an object: {tried:?}",
        tried.len()
    );
    assert_eq!(
        snapshot(&app.pool).await,
        before,
        "refused calls changed nothing"
    );
}

/// Inside the tenant, every function for every role: a role without the
/// function's permission is refused (403) and changes nothing; a role
/// with it gets past the check (whatever the call then finds: an earlier
/// role's call may have used up its target).
#[sqlx::test(migrations = "../migrations")]
async fn each_role_reaches_exactly_what_its_permissions_allow(pool: PgPool) {
    let app = spawn_app(pool).await;
    let w = world(&app).await;
    let registered: BTreeSet<(String, Method)> = leptos::server_fn::axum::server_fn_paths()
        .filter(|(path, _)| path.starts_with("/api/admin/"))
        .map(|(path, method)| (path.to_owned(), method))
        .collect();
    let mut allowed_somewhere = BTreeSet::new();
    for (path, method) in in_calling_order(&registered) {
        let permission = permission_of(&path);
        let args = args_for(w.target, &path);
        for (role, client) in &w.by_role {
            let before = snapshot(&app.pool).await;
            let status = call(&app, client, &method, &path, &args).await;
            if role.allows(permission) {
                assert!(
                    status != 401 && status != 403,
                    "{role:?} may call {path} ({permission:?}): {status}"
                );
                allowed_somewhere.insert(path.clone());
            } else {
                assert_eq!(status, 403, "{role:?} may not call {path} ({permission:?})");
                assert_eq!(
                    snapshot(&app.pool).await,
                    before,
                    "{role:?}'s refused {path} changed nothing"
                );
            }
        }
    }
    // Support is refused what changes anything, and owners reach all.
    assert_eq!(allowed_somewhere.len(), registered.len());
    for path in [
        "/api/admin/codes/issue",
        "/api/admin/codes/revoke",
        "/api/admin/tokens",
        "/api/admin/webhooks",
    ] {
        assert!(!Role::Support.allows(permission_of(path)), "{path}");
    }
    for path in [
        "/api/admin/codes",
        "/api/admin/learners",
        "/api/admin/audit",
    ] {
        assert!(Role::Support.allows(permission_of(path)), "{path}");
    }
}
