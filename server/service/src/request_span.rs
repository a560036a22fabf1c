//! The span of the request being served, wherever the code runs.
//!
//! Operators find a request's lines by its span (`request`, opened by the
//! server's trace layer) and want it to say who asked. The use cases learn
//! that late ([`crate::session`]), deep inside other layers' spans: inside
//! tower-sessions, `Span::current()` is the session layer's own `call`
//! span, and entering the request span again does not help (the tracing
//! registry skips a span that is already entered further out). A page also
//! renders its resources in tasks of their own. So the request span is
//! carried by the task instead: the server scopes it around each request
//! ([`within`]) and hands it on to every task Leptos spawns, and
//! [`record`] writes to it.

use std::future::Future;

use tracing::Span;

tokio::task_local! {
    static REQUEST_SPAN: Span;
}

/// Runs `future` as part of the request whose span is `span`.
pub fn within<F: Future>(span: Span, future: F) -> impl Future<Output = F::Output> {
    REQUEST_SPAN.scope(span, future)
}

/// The span of the request this task serves, if it serves one.
pub fn current() -> Option<Span> {
    REQUEST_SPAN.try_with(Span::clone).ok()
}

/// Records `value` as `field` of the request's span (or, outside a request,
/// of the current span).
pub fn record(field: &str, value: impl std::fmt::Display) {
    current()
        .unwrap_or_else(Span::current)
        .record(field, tracing::field::display(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_inside_a_request_sees_its_span_and_one_outside_sees_none() {
        // A real subscriber, so that spans have ids to compare.
        let _subscriber = tracing::subscriber::set_default(tracing_subscriber::registry());
        assert!(current().is_none());
        let span = tracing::info_span!("request");
        let other = tracing::info_span!("call");
        assert!(span.id().is_some() && span.id() != other.id());
        // Inside another span (as inside tower-sessions), the request's
        // span is still the one found.
        let seen = within(span.clone(), async { other.in_scope(current) }).await;
        assert_eq!(seen.and_then(|s| s.id()), span.id());
        assert!(current().is_none(), "the scope ends with the request");
    }
}
