//! Each code is stored once: racing imports of the same codes bring each in
//! once, a retried import with its key imports nothing new, two tenants'
//! imports never meet, text that reads as ours and as a foreign code is one
//! code, and an import after a code key rotation finds codes stored under
//! the older key.

use reqwest::StatusCode;
use serde_json::{Value, json};
use sqlx::PgPool;

use super::{course_b, import, rejected, stored};
use crate::support::app::spawn_app;
use crate::support::course::{
    admin, assert_invariants, course, enter_code, error_of, issue, learners, open, post_json,
    state_of,
};

#[sqlx::test(migrations = "../migrations")]
async fn racing_imports_of_the_same_codes_bring_each_in_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let shares = [
        course(&app, &admin, json!({})).await.share,
        course_b(&app, &admin).await,
    ];
    let codes: Vec<String> = (0..1_000).map(|i| format!("RACE{i:05}")).collect();
    let answers = futures::future::join_all(shares.iter().flat_map(|share| {
        let codes = codes.clone();
        let client = admin.client.clone();
        let app = &app;
        (0..2).map(move |_| {
            let (codes, client) = (codes.clone(), client.clone());
            async move { import(app, &client, *share, json!({ "codes": codes })).await }
        })
    }))
    .await;
    let mut imported = 0;
    for (status, body) in &answers {
        match status {
            201 => imported += body["imported"].as_u64().expect("imported"),
            422 => assert_eq!(body["code"], "nothing_imported", "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(imported, 1_000, "every code came in exactly once");
    let distinct: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT digest) FROM auth_codes WHERE share_id = ANY($1)",
    )
    .bind(&shares[..])
    .fetch_one(&app.pool)
    .await
    .expect("count");
    assert_eq!(distinct, 1_000);
    assert_invariants(&app, "after racing imports").await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_retried_import_with_its_key_imports_nothing_new(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let send = || {
        admin
            .client
            .post(format!(
                "{}/api/v1/shares/{}/imports",
                app.address, course.share
            ))
            .header("idempotency-key", "import-7")
            .json(&json!({ "codes": ["KEYED-0001", "KEYED-0002"] }))
            .send()
    };
    let first = send().await.expect("first");
    assert_eq!(first.status(), StatusCode::CREATED);
    let first: Value = first.json().await.expect("json");
    let again = send().await.expect("again");
    assert_eq!(again.status(), StatusCode::CREATED);
    assert_eq!(
        again
            .headers()
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    let again: Value = again.json().await.expect("json");
    assert_eq!(again, first);
    assert_eq!(stored(&app, course.share).await, (2, 1, true));
}

#[sqlx::test(migrations = "../migrations")]
async fn two_tenants_imports_never_meet(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (shop_a, shop_b) = (admin(&app).await, admin(&app).await);
    let (course_a, course_b) = (
        course(&app, &shop_a, json!({})).await,
        course(&app, &shop_b, json!({ "title": "Another shop" })).await,
    );
    // The same text sold by two shops: each imports it, neither learns of
    // the other, neither can take the other's.
    for (admin, course) in [(&shop_a, &course_a), (&shop_b, &course_b)] {
        let (status, report) = import(
            &app,
            &admin.client,
            course.share,
            json!({ "codes": ["ORDER-0001"] }),
        )
        .await;
        assert_eq!(status, 201, "{report}");
        assert_eq!(report["imported"], 1);
    }
    // Each learner redeems the text in their own shop's course.
    let mut both = learners(&app, 2).await;
    let (_, bea) = both.remove(1);
    let (_, ann) = both.remove(0);
    for (client, course) in [(&ann, &course_a), (&bea, &course_b)] {
        assert_eq!(
            enter_code(&app, client, &course.slug, "order0001")
                .await
                .status(),
            200
        );
        assert_eq!(open(&app, client, course, None).await.status(), 200);
    }
    assert_eq!(state_of(&app, course_a.share).await.bound, 1);
    assert_eq!(state_of(&app, course_b.share).await.bound, 1);
    assert_invariants(&app, "after two shops' codes were redeemed").await;
    // An admin looking the text up finds their own tenant's code.
    let found: Value = post_json(
        &app,
        &shop_b.client,
        &format!("/api/v1/tenants/{}/codes/find", shop_b.tenant),
        json!({ "code": "ORDER-0001" }),
    )
    .await
    .json()
    .await
    .expect("json");
    assert_eq!(
        found["share_id"].as_str(),
        Some(course_b.share.to_string().as_str()),
        "{found}"
    );
}

/// A code in our format that another tenant issued is imported like any
/// other (the platform-wide digest key is gone:
/// `20261214000001_drop_global_keys.sql`), and each tenant's learner binds
/// that tenant's own code: a typed code is only looked up in its share's
/// tenant, so the two never meet.
#[sqlx::test(migrations = "../migrations")]
async fn a_code_of_ours_another_tenant_holds_is_imported_and_each_binds_its_own(pool: PgPool) {
    let app = spawn_app(pool).await;
    let (shop_a, shop_b) = (admin(&app).await, admin(&app).await);
    let (course_a, course_b) = (
        course(&app, &shop_a, json!({})).await,
        course(&app, &shop_b, json!({ "title": "Another shop" })).await,
    );
    let (_, text) = issue(&app, &shop_a, course_a.share, 1).await.remove(0);
    let (status, report) = import(
        &app,
        &shop_b.client,
        course_b.share,
        json!({ "codes": [text], "format": "ours" }),
    )
    .await;
    assert_eq!(status, 201, "{report}");
    assert_eq!(report["imported"], 1, "not already_exists: {report}");
    let mut both = learners(&app, 2).await;
    let (bea_id, bea) = both.remove(1);
    let (ann_id, ann) = both.remove(0);
    for (client, course) in [(&ann, &course_a), (&bea, &course_b)] {
        assert_eq!(
            enter_code(&app, client, &course.slug, &text).await.status(),
            200
        );
        assert_eq!(open(&app, client, course, None).await.status(), 200);
    }
    let holders: Vec<(uuid::Uuid, Option<uuid::Uuid>)> = sqlx::query_as(
        "SELECT share_id, bound_principal FROM auth_codes WHERE share_id = ANY($1) ORDER BY share_id",
    )
    .bind(vec![course_a.share, course_b.share])
    .fetch_all(&app.pool)
    .await
    .expect("codes");
    let mut expected = vec![
        (course_a.share, Some(ann_id)),
        (course_b.share, Some(bea_id)),
    ];
    expected.sort();
    assert_eq!(
        holders, expected,
        "each tenant's code, bound by its learner"
    );
    assert_invariants(&app, "after the twin codes were redeemed").await;
}

/// Text that is one of ours and also a foreign code is one code: the
/// look-up finds either, so an import never stores its other reading
/// beside it (two rows would let two accounts bind one text).
#[sqlx::test(migrations = "../migrations")]
async fn a_code_is_never_stored_under_both_readings(pool: PgPool) {
    let app = spawn_app(pool).await;
    let admin = admin(&app).await;
    let course = course(&app, &admin, json!({})).await;
    let other = course_b(&app, &admin).await;
    // An issued code re-imported as foreign (the default), here or in
    // another share: it exists already.
    let issued = issue(&app, &admin, course.share, 1).await.remove(0).1;
    for share in [course.share, other] {
        let (status, body) = import(
            &app,
            &admin.client,
            share,
            json!({ "codes": [issued.clone()] }),
        )
        .await;
        assert_eq!(
            (status, body["code"].as_str()),
            (422, Some("nothing_imported")),
            "{body}"
        );
    }
    // A foreign code that happens to pass our check, imported again as
    // ours into another share of the tenant: it exists already.
    let text = engine::codes::PlainCode::generate().display();
    let first = import(
        &app,
        &admin.client,
        course.share,
        json!({ "codes": [text.clone()] }),
    )
    .await;
    assert_eq!(first.0, 201, "{}", first.1);
    let (status, body) = import(
        &app,
        &admin.client,
        other,
        json!({ "format": "ours", "codes": [text.clone()] }),
    )
    .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("nothing_imported")),
        "{body}"
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM auth_codes WHERE share_id = ANY($1)")
        .bind(&[course.share, other][..])
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(rows, 2, "the issued code and the one imported");
    // Two learners typing the issued code: one binds it, the other is
    // refused as it is bound.
    let mut both = learners(&app, 2).await;
    let (_, bea) = both.remove(1);
    let (_, ann) = both.remove(0);
    assert_eq!(
        enter_code(&app, &ann, &course.slug, &issued).await.status(),
        200
    );
    assert_eq!(open(&app, &ann, &course, None).await.status(), 200);
    let refused = enter_code(&app, &bea, &course.slug, &issued).await;
    assert_eq!(error_of(refused).await, (409, "code_bound".to_owned()));
    assert_invariants(&app, "after a twin was refused").await;
}

/// After the code key is rotated, an import still finds the codes stored
/// under the older key: ours issued before (the same text is the same
/// code) and foreign ones imported before are `already_exists`, and no
/// second row appears for either.
#[sqlx::test(migrations = "../migrations")]
async fn an_import_after_a_key_rotation_finds_codes_stored_under_the_older_key(pool: PgPool) {
    use secrecy::SecretString;
    const OLD: &str = "1:import-rotation-old-key-0123456789";
    const NEW: &str = "2:import-rotation-new-key-9876543210";
    let mut before = crate::support::course::load_settings();
    before.secrets.code_keys = Some(SecretString::from(OLD));
    before.secrets.code_key_current = 1;
    let old_app = crate::support::app::spawn_app_with(pool.clone(), before.clone()).await;
    let admin = admin(&old_app).await;
    let course = course(&old_app, &admin, json!({})).await;
    let ours = issue(&old_app, &admin, course.share, 1).await.remove(0);
    let (status, first) = import(
        &old_app,
        &admin.client,
        course.share,
        json!({ "codes": ["ROTATE-0001"] }),
    )
    .await;
    assert_eq!(status, 201, "{first}");

    let mut after = before;
    after.secrets.code_keys = Some(SecretString::from(format!("{NEW},{OLD}")));
    after.secrets.code_key_current = 2;
    let app = crate::support::app::spawn_app_with(pool, after).await;
    let codes_before = stored(&app, course.share).await.0;
    let (status, report) = import(
        &app,
        &admin.client,
        course.share,
        json!({ "codes": ["ROTATE-0001", "ROTATE-0002"] }),
    )
    .await;
    assert_eq!(status, 201, "{report}");
    assert_eq!(report["imported"], 1, "{report}");
    assert_eq!(rejected(&report), vec![(1, "already_exists".to_owned())]);
    let (status, report) = import(
        &app,
        &admin.client,
        course.share,
        json!({ "codes": [ours.1, "ROTATE-0003"], "format": "ours" }),
    )
    .await;
    // Ours is found under key 1; the other line is not one of ours.
    assert_eq!(status, 422, "{report}");
    assert_eq!(report["code"], "nothing_imported", "{report}");
    assert_eq!(
        stored(&app, course.share).await.0,
        codes_before + 1,
        "only ROTATE-0002 came in"
    );
    let versions: Vec<i16> = sqlx::query_scalar(
        "SELECT key_version FROM auth_codes WHERE share_id = $1 ORDER BY key_version",
    )
    .bind(course.share)
    .fetch_all(&app.pool)
    .await
    .expect("versions");
    assert_eq!(versions, vec![1, 1, 2], "{versions:?}");
}
