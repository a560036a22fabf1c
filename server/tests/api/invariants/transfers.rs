//! Transfer approvals under concurrency: an approval racing the receiving
//! account's own first access (and the holder's) has exactly one outcome,
//! and many admins approving one request move the code once.

use futures::future::join_all;
use serde_json::json;
use sqlx::PgPool;

use crate::support::app::spawn_app;
use crate::support::course::{admin, assert_invariants, enter_code, error_of, learners, open};
use crate::support::transfers::{bound_course, confirmed_request, count, decide, holder};

/// The concurrency suite's transfer: an admin approves while the
/// receiving account opens the course with a code of its own that it
/// entered before, and while the holder opens it too, all at once. Either
/// the approval wins (the receiving account holds the moved code, its own
/// stays unused) or its own first access does (the approval is refused
/// `target_has_code` and nothing moved): exactly one outcome, every
/// round, and the invariants hold.
#[sqlx::test(migrations = "../migrations")]
async fn an_approval_racing_the_receiving_accounts_first_access_has_one_outcome(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let rounds = 6;
    let mut outcomes = Vec::new();
    for round in 0..rounds {
        let (course, codes, (ann, ann_client)) = bound_course(&app, &owner, 2).await;
        let bob = learners(&app, 1).await.remove(0);
        let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
        // Bob entered the course's second code (pending in his session).
        assert_eq!(
            enter_code(&app, &bob.1, &course.slug, &codes[1].1)
                .await
                .status(),
            200
        );
        let approval = decide(&app, &owner, id, "approve", json!({}));
        let bobs_access = open(&app, &bob.1, &course, None);
        let anns_access = open(&app, &ann_client, &course, None);
        let (approval, bobs_access, anns_access) =
            futures::join!(approval, bobs_access, anns_access);
        let approved = approval.status() == 200;
        if !approved {
            assert_eq!(
                error_of(approval).await,
                (409, "target_has_code".to_owned()),
                "round {round}"
            );
        }
        assert_eq!(
            bobs_access.status(),
            200,
            "round {round}: Bob gets in either way"
        );
        assert!(
            [200, 403].contains(&anns_access.status().as_u16()),
            "round {round}: {}",
            anns_access.status()
        );
        let (moved, own) = (
            holder(&app, codes[0].0).await,
            holder(&app, codes[1].0).await,
        );
        if approved {
            assert_eq!((moved, own), (Some(bob.0), None), "round {round}");
        } else {
            assert_eq!((moved, own), (Some(ann), Some(bob.0)), "round {round}");
        }
        let bobs_bindings = count(
            &app,
            &format!(
                "SELECT count(*) FROM auth_codes WHERE share_id = '{}' AND bound_principal = '{}'",
                course.share, bob.0
            ),
        )
        .await;
        assert_eq!(bobs_bindings, 1, "round {round}");
        outcomes.push(approved);
    }
    eprintln!(
        "approvals won {} of {rounds} rounds",
        outcomes.iter().filter(|w| **w).count()
    );
    assert_invariants(&app, "after the races").await;
}

/// Many admins approving the same request at once: it moves once.
#[sqlx::test(migrations = "../migrations")]
async fn concurrent_approvals_move_a_code_once(pool: PgPool) {
    let app = spawn_app(pool).await;
    let owner = admin(&app).await;
    let (course, codes, (_, ann_client)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let id = confirmed_request(&app, &course, (&ann_client, &bob)).await;
    let answers = join_all((0..8).map(|_| decide(&app, &owner, id, "approve", json!({})))).await;
    let statuses: Vec<u16> = answers.iter().map(|a| a.status().as_u16()).collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        7,
        "{statuses:?}"
    );
    assert_eq!(holder(&app, codes[0].0).await, Some(bob.0));
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM outbox WHERE event_type = 'code.transferred'"
        )
        .await,
        1
    );
    assert_invariants(&app, "after concurrent approvals").await;
}
