//! Entering a code: re-entering your own bound code says so and keeps
//! nothing pending; random and malformed codes get only 4xx and change
//! nothing; code entry is throttled per client address, and wrong codes
//! for a course are counted as a signal that never stops a right one; and
//! codes issued under an older code key still redeem after a key rotation.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app_with;
use crate::support::course::{
    self, ShareState, admin, assert_invariants, enter_code, error_of, issue, learners,
    load_settings, open, state_of,
};

/// Phase 1 answers what the next step needs: a learner who types the code
/// already bound to them hears "bound", and nothing is kept pending or
/// counted (the code is not theirs twice).
#[sqlx::test(migrations = "../migrations")]
async fn re_entering_your_own_bound_code_says_bound_and_keeps_nothing_pending(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, course.share, 1).await;
    let entered: serde_json::Value = enter_code(&app, &client, &course.slug, &codes[0].1)
        .await
        .json()
        .await
        .expect("json");
    assert_eq!(entered["status"], "pending");
    let first = open(&app, &client, &course, None).await;
    assert_eq!(first.headers()["x-admitone-access"], "bound");

    let again = enter_code(&app, &client, &course.slug, &codes[0].1).await;
    assert_eq!(again.status(), 200);
    let again: serde_json::Value = again.json().await.expect("json");
    assert_eq!(again["status"], "bound", "{again}");
    let page: serde_json::Value = client
        .get(format!("{}/api/v1/s/{}", app.address, course.slug))
        .send()
        .await
        .expect("share page")
        .json()
        .await
        .expect("json");
    assert_eq!(page["me"]["pending"], false, "{page}");
    assert_eq!(page["me"]["binding"]["code_id"], codes[0].0.to_string());
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        },
        "re-entering counts nothing"
    );
}

/// 10,000 random and malformed codes: only 4xx, nothing changes.
#[sqlx::test(migrations = "../migrations")]
async fn random_and_malformed_codes_get_only_4xx_and_change_nothing(pool: PgPool) {
    use rand::{Rng as _, SeedableRng as _};
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (_, client) = learners(&app, 1).await.remove(0);
    let course = course::course(&app, &admin, json!({})).await;
    issue(&app, &admin, course.share, 10).await;
    let before = state_of(&app, course.share).await;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x00AD_0001);
    let alphabet: Vec<char> =
        "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdILOU-_ !@#%&*()<>\"'\\/é中\u{0}\t"
            .chars()
            .collect();
    let mut inputs: Vec<String> = Vec::with_capacity(10_000);
    for i in 0..10_000 {
        let text = match i % 4 {
            // Well-formed codes that were never issued.
            0 => engine::codes::PlainCode::generate().display(),
            1 => (0..rng.gen_range(0..40))
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                .collect(),
            2 => (0..12).map(|_| alphabet[rng.gen_range(0..32)]).collect(),
            _ => "X".repeat(rng.gen_range(0..3000)),
        };
        inputs.push(text);
    }
    for chunk in inputs.chunks(50) {
        let responses = join_all(
            chunk
                .iter()
                .map(|code| enter_code(&app, &client, &course.slug, code)),
        )
        .await;
        for (response, code) in responses.into_iter().zip(chunk) {
            let status = response.status().as_u16();
            assert!((400..500).contains(&status), "{code:?} -> {status}");
        }
    }
    assert_eq!(state_of(&app, course.share).await, before);
    let pending = open(&app, &client, &course, None).await;
    assert_eq!(
        error_of(pending).await,
        (403, "code_required".into()),
        "nothing became pending"
    );
}

/// Code entry is throttled per client IP: past the limit, a right code from
/// yet another account is refused (429), whichever course it is for.
#[sqlx::test(migrations = "../migrations")]
async fn code_entry_is_throttled_per_ip(pool: PgPool) {
    let mut settings = load_settings();
    settings.throttle.code_per_ip = 3;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let first = course::course(&app, &admin, json!({})).await;
    let second = course::course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, first.share, 2).await;
    let more = issue(&app, &admin, second.share, 2).await;
    let people = learners(&app, 4).await;
    // Three attempts from one IP, by three accounts, over two courses.
    for ((_, client), (slug, code)) in people.iter().zip([
        (&first.slug, &codes[0].1),
        (&first.slug, &codes[1].1),
        (&second.slug, &more[0].1),
    ]) {
        assert_eq!(enter_code(&app, client, slug, code).await.status(), 200);
    }
    let refused = enter_code(&app, &people[3].1, &second.slug, &more[1].1).await;
    assert!(refused.headers().contains_key("retry-after"));
    assert_eq!(refused.headers()["ratelimit-limit"], "3");
    assert_eq!(refused.headers()["ratelimit-remaining"], "0");
    assert_eq!(
        refused.headers()["ratelimit-reset"],
        refused.headers()["retry-after"]
    );
    let status = refused.status().as_u16();
    let body: serde_json::Value = refused.json().await.expect("json");
    assert_eq!(
        (status, body["code"].as_str()),
        (429, Some("rate_limited")),
        "{body}"
    );
    assert!(
        body.to_string().contains("from your network"),
        "the per-IP limit refused: {body}"
    );
    assert_eq!(
        error_of(open(&app, &people[3].1, &second, None).await).await,
        (403, "code_required".into()),
        "the refused code is not pending"
    );
}

/// A flood of wrong codes for one course never stops a learner with a
/// right one: the course-wide count takes only failed look-ups, and past
/// its limit it is a signal (a metric and a log line for the operator),
/// never a refusal. (Each account and each client address keep their own
/// limits, which do refuse.)
#[sqlx::test(migrations = "../migrations")]
async fn wrong_codes_for_a_course_never_stop_a_learner_with_a_right_one(pool: PgPool) {
    let mut settings = load_settings();
    settings.throttle.code_per_share = 3;
    let app = spawn_app_with(pool, settings).await;
    let admin = admin(&app).await;
    let hot = course::course(&app, &admin, json!({})).await;
    let codes = issue(&app, &admin, hot.share, 2).await;
    let people = learners(&app, 6).await;
    // Ten well-formed codes nobody issued, from five accounts.
    for (_, client) in &people[..5] {
        for _ in 0..2 {
            let wrong = engine::codes::PlainCode::generate().display();
            let (status, code) = error_of(enter_code(&app, client, &hot.slug, &wrong).await).await;
            assert_eq!((status, code.as_str()), (422, "invalid_code"));
        }
    }
    let counted = || async {
        let key = app.redis.keys().throttle(
            engine::coordination::ThrottleScope::CodeShare,
            &hot.share.to_string(),
        );
        redis::cmd("GET")
            .arg(key)
            .query_async::<Option<i64>>(&mut app.redis.conn())
            .await
            .expect("GET")
    };
    assert_eq!(
        counted().await,
        Some(10),
        "every wrong code counted for the course"
    );
    // Past the course's limit, right codes still go through, and are not
    // counted.
    for ((_, client), (_, code)) in people[4..].iter().zip(&codes) {
        let entered = enter_code(&app, client, &hot.slug, code).await;
        assert_eq!(
            entered.status(),
            200,
            "a right code past the course's limit"
        );
    }
    assert_eq!(counted().await, Some(10), "right codes are not counted");
    assert_eq!(
        state_of(&app, hot.share).await,
        ShareState {
            bound: 0,
            quota_used: 0,
            records: 0
        },
        "entering binds nothing"
    );
}

/// Key rotation: codes issued under key 1 still redeem on an instance whose
/// current key is 2 (and that still knows key 1); codes it issues are under
/// key 2, unknown to an instance that has key 1 only.
#[sqlx::test(migrations = "../migrations")]
async fn codes_issued_under_an_old_key_redeem_after_rotation(pool: PgPool) {
    use secrecy::SecretString;
    const OLD: &str = "1:rotation-test-old-key-0123456789";
    const NEW: &str = "2:rotation-test-new-key-9876543210";
    let mut before = load_settings();
    before.secrets.code_keys = Some(SecretString::from(OLD));
    before.secrets.code_key_current = 1;
    let old_app = spawn_app_with(pool.clone(), before.clone()).await;
    let admin = admin(&old_app).await;
    let course = course::course(&old_app, &admin, json!({})).await;
    let old_codes = issue(&old_app, &admin, course.share, 2).await;
    let version_of = |id: Uuid| {
        let pool = pool.clone();
        async move {
            sqlx::query_scalar::<_, i16>("SELECT key_version FROM auth_codes WHERE id = $1")
                .bind(id)
                .fetch_one(&pool)
                .await
                .expect("key version")
        }
    };
    assert_eq!(version_of(old_codes[0].0).await, 1);

    // The same deployment restarted with key 2 current (same Redis prefix
    // and session key: signed-in browsers stay signed in).
    let mut after = before;
    after.secrets.code_keys = Some(SecretString::from(format!("{NEW},{OLD}")));
    after.secrets.code_key_current = 2;
    let app = spawn_app_with(pool.clone(), after).await;
    let people = learners(&app, 2).await;
    assert_eq!(
        enter_code(&app, &people[0].1, &course.slug, &old_codes[0].1)
            .await
            .status(),
        200,
        "a code under key 1 is found with key 2 current"
    );
    let opened = open(&app, &people[0].1, &course, None).await;
    assert_eq!(opened.status(), 200);
    assert_eq!(opened.headers()["x-admitone-access"], "bound");

    let new_code = issue(&app, &admin, course.share, 1).await.remove(0);
    assert_eq!(version_of(new_code.0).await, 2, "new codes are under key 2");
    assert_eq!(
        error_of(enter_code(&old_app, &people[1].1, &course.slug, &new_code.1).await).await,
        (422, "invalid_code".into()),
        "key 1 alone does not know a code made under key 2"
    );
    assert_eq!(
        enter_code(&app, &people[1].1, &course.slug, &new_code.1)
            .await
            .status(),
        200
    );
    assert_eq!(open(&app, &people[1].1, &course, None).await.status(), 200);
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 2,
            quota_used: 2,
            records: 2
        }
    );
    assert_invariants(&app, "rotation").await;
}
