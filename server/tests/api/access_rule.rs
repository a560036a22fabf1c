//! The access rule: an access is counted where a person opens a resource
//! (`POST …/open`, the resource page), never on its bytes. `GET …/content`
//! serves only under a live grant, writes nothing, stops within
//! `settlement.grant_recheck_secs` after a revoke, an unbind, a pause or
//! "sign out everywhere", and is limited per account.

use futures::future::join_all;
use sqlx::PgPool;
use uuid::Uuid;

use crate::support::app::spawn_app_with;
use crate::support::course::{
    self, ShareState, admin, error_of, load_settings, one_learner, state_of,
};

/// 100 concurrent first openings by one learner with one request id (a
/// client retrying hard) bind once and count one access.
#[sqlx::test(migrations = "../migrations")]
async fn a_hundred_concurrent_first_openings_with_one_request_id_count_once(pool: PgPool) {
    let app = spawn_app_with(pool, load_settings()).await;
    let admin = admin(&app).await;
    let (course, _, _, client) = one_learner(&app, &admin).await;
    let url = format!(
        "{}/api/v1/s/{}/resources/{}/open",
        app.address, course.slug, course.resource
    );
    let key = Uuid::new_v4().to_string();
    let answers =
        join_all((0..100).map(|_| client.post(&url).header("idempotency-key", &key).send())).await;
    let mut bound = 0;
    for answer in answers {
        let answer = answer.expect("request");
        let status = answer.status();
        let access = answer
            .headers()
            .get("x-admitone-access")
            .map(|v| v.to_str().expect("ascii").to_owned());
        match (status.as_u16(), access.as_deref()) {
            (200, Some("bound")) => bound += 1,
            (200, Some("replayed" | "reused")) => {}
            // Busy: the documented "retry with the same request id".
            (409, None) => assert_eq!(error_of(answer).await.1, "busy"),
            other => panic!("unexpected answer {other:?}"),
        }
    }
    assert_eq!(bound, 1, "one opening bound the code");
    assert_eq!(
        state_of(&app, course.share).await,
        ShareState {
            bound: 1,
            quota_used: 1,
            records: 1
        }
    );
    // The retry after the storm is answered from the record.
    let again = client
        .post(&url)
        .header("idempotency-key", &key)
        .send()
        .await
        .expect("request");
    assert_eq!(again.headers()["x-admitone-access"], "replayed");
    course::assert_invariants(&app, "after 100 openings with one request id").await;
}
