//! The error pages read back: answers that are not ours, problem
//! documents, every kind's translation, and our own answers' round trip.

use server_fn::error::FromServerFnError as _;

use super::{AppError, ErrorKind, Problem};

#[test]
fn an_answer_that_is_not_ours_reads_as_a_moment_s_outage() {
    for foreign in [
        &b"<html><body><h1>502 Bad Gateway</h1></body></html>"[..],
        br#"{"type":"/api/v1/docs#problem-unavailable","status":503,"code":"timeout"}"#,
        br#"{"message":"upstream timed out"}"#,
        b"",
    ] {
        assert!(
            matches!(
                AppError::de(foreign.to_vec().into()),
                AppError::Unavailable { .. }
            ),
            "{}",
            String::from_utf8_lossy(foreign)
        );
    }
}

#[test]
fn a_problem_document_reads_as_the_error_of_its_status() {
    let read = |body: &str| AppError::de(body.as_bytes().to_vec().into());
    assert_eq!(
        read(
            r#"{"status":403,"code":"cross_site_request","detail":"This request came from another site."}"#
        ),
        AppError::Refused {
            kind: ErrorKind::Forbidden,
            reason: "cross_site_request".into(),
            message: "This request came from another site.".into(),
            field: None,
        }
    );
    // No reference of ours to show for a fault elsewhere: try again.
    for fault in [
        r#"{"status":500,"code":"internal","detail":"something went wrong"}"#,
        r#"{"status":504,"code":"gateway_timeout"}"#,
        r#"{"status":408,"code":"request_timeout"}"#,
    ] {
        assert!(
            matches!(read(fault), AppError::Unavailable { .. }),
            "{fault}"
        );
    }
    assert!(matches!(
        read(r#"{"status":409,"code":"busy_retry","detail":"someone else holds it"}"#),
        AppError::TryAgain {
            kind: ErrorKind::Busy,
            ..
        }
    ));
    assert_eq!(
        read(r#"{"status":409,"code":"code_bound"}"#),
        AppError::Refused {
            kind: ErrorKind::Conflict,
            reason: "code_bound".into(),
            message: "code_bound".into(),
            field: None,
        },
        "a problem without a detail says its code"
    );
    assert_eq!(
        read(r#"{"status":404,"code":"no_such_route","detail":"no such route"}"#),
        AppError::NotFound
    );
    assert_eq!(
        read(r#"{"status":422,"code":"invalid","detail":"bad","field":"email"}"#),
        AppError::invalid("email", "bad")
    );
}

/// Every kind keeps its kind through the translation (a malformed
/// request is shown as invalid input), so the status a page's error
/// implies is the one the answer carries.
#[test]
fn a_problem_keeps_its_kind() {
    for kind in ErrorKind::ALL {
        let error = AppError::from_problem(Problem {
            kind,
            code: "code".into(),
            message: "message".into(),
            field: None,
            retry_after_secs: Some(7),
            limit: Some(3),
        });
        let expected = if kind == ErrorKind::Malformed {
            ErrorKind::Invalid
        } else {
            kind
        };
        assert_eq!(error.kind(), expected, "{kind:?}");
        match error {
            AppError::Unavailable { retry_after_secs }
            | AppError::TryAgain {
                retry_after_secs, ..
            } => assert_eq!(retry_after_secs, 7, "{kind:?}"),
            AppError::RateLimited {
                retry_after_secs,
                limit,
                ..
            } => assert_eq!((retry_after_secs, limit), (7, 3)),
            _ => {}
        }
    }
}

#[test]
fn our_own_answers_decode_as_they_were_sent() {
    for ours in [
        AppError::NotFound,
        AppError::invalid("email", "not an email address"),
        AppError::Internal {
            reference: "abc".into(),
        },
    ] {
        let sent = ours.ser();
        assert_eq!(AppError::de(sent), ours);
    }
}
