//! The `settle` span records each settlement's outcome (`bound`,
//! `granted`, `refused`): what the request log and the traces show an
//! operator.
//!
//! A test binary of its own: whether a span is recorded is cached per
//! callsite, process-wide, and another test reaching the settle span
//! first, on another thread, while this test's subscriber was being set
//! up, once cached "nobody listens" (seen in CI). Alone in its process,
//! the test is the only one there.

use std::sync::{Arc, Mutex};

use engine::settlement::options::SettlementOptions;
use sqlx::PgPool;
use tracing::{
    field::{Field, Visit},
    span,
};
use tracing_subscriber::{Layer, layer::Context, prelude::*};

#[path = "settlement/fixture.rs"]
#[expect(
    dead_code,
    reason = "the settlement suite's fixture; this test uses a part"
)]
mod fixture;

use fixture::{Policy, World};

/// Collects the `outcome` values recorded on spans.
#[derive(Clone, Default)]
struct Outcomes(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for Outcomes {
    fn on_record(&self, _span: &span::Id, values: &span::Record<'_>, _ctx: Context<'_, S>) {
        struct Outcome<'a>(&'a Mutex<Vec<String>>);
        impl Visit for Outcome<'_> {
            fn record_str(&mut self, field: &Field, value: &str) {
                if field.name() == "outcome" {
                    self.0.lock().expect("lock").push(value.to_owned());
                }
            }
            fn record_debug(&mut self, _field: &Field, _value: &dyn std::fmt::Debug) {}
        }
        values.record(&mut Outcome(&self.0));
    }
}

#[sqlx::test(migrations = "../../migrations")]
async fn the_settle_span_records_bound_granted_or_refused(pool: PgPool) {
    let outcomes = Outcomes::default();
    // `#[sqlx::test]` runs the test on one thread: every task below
    // reports to this subscriber.
    let _guard = tracing_subscriber::registry()
        .with(outcomes.clone())
        .set_default();
    let world = World::new(pool, Policy::default()).await;
    // Callsites cache whether anyone listens. A test on another thread
    // hitting the settle span for the first time while this subscriber
    // was being set up could have cached "nobody" (seen once in CI):
    // have every callsite asked again now that it is set.
    tracing::callsite::rebuild_interest_cache();
    let ann = world.learner("ann").await;
    let (settler, _) = world.settler(SettlementOptions::default());
    let first = world.request(ann, world.resources[0], Some(world.code(0)), "r1");
    world.settle(&settler, &first).await.expect("bound");
    world
        .settle(
            &settler,
            &world.request(ann, world.resources[1], None, "r2"),
        )
        .await
        .expect("granted");
    let bob = world.learner("bob").await;
    world
        .settle(
            &settler,
            &world.request(bob, world.resources[0], None, "r3"),
        )
        .await
        .expect_err("refused: no code");
    assert_eq!(
        *outcomes.0.lock().expect("lock"),
        ["bound", "granted", "refused"]
    );
}
