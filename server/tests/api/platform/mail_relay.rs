//! The mail relay against a real SMTP server (`harness::smtp`): what goes
//! out (multipart text and HTML, in the language asked for, the link
//! derived at delivery and never stored), authentication, retries and
//! dead letters, the lease that makes a crash send a mail again at most
//! once per lease and never lose it, several relays at once, and the dev
//! mailbox.

use std::{sync::Arc, time::Duration};

use harness::smtp::SmtpSink;
use secrecy::SecretString;
use server::mail::MailRelay;
use sha2::{Digest as _, Sha256};
use sqlx::PgPool;

use crate::support::app::{new_client, spawn_app, spawn_app_with};
use crate::support::mail::{
    MAIL_WAIT, link_key, mail_settings, register, spawn_app_with_mail, token_of, wait_until,
};

#[sqlx::test(migrations = "../migrations")]
async fn a_mail_goes_out_over_smtp_as_text_and_html_in_the_language_asked_with_its_link(
    pool: PgPool,
) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    assert!(
        register(&app, "ada@example.com", "zh-CN,zh;q=0.9")
            .await
            .status()
            .is_success()
    );
    let mail = sink
        .wait_for("ada@example.com", "完成注册", MAIL_WAIT)
        .await;
    assert_eq!(mail.subject, "完成注册");
    assert_eq!(mail.content_type, "multipart/alternative");
    assert_eq!(mail.from, "no-reply@admitone.test");
    assert!(!mail.over_tls, "the plain sink's mail is plain");
    assert!(mail.text.contains("24 小时内有效"), "{}", mail.text);
    let raw = String::from_utf8_lossy(&mail.raw);
    assert!(raw.contains("Auto-Submitted: auto-generated"), "{raw}");
    let link = mail
        .link("/register/finish?token=")
        .expect("a link in the text");
    assert!(
        link.starts_with("http://127.0.0.1:3000/register/finish?token="),
        "{link}"
    );
    assert!(
        mail.html.contains(&link),
        "the HTML part carries the same link"
    );

    // The row: recorded sent, its id in the Message-ID; the link is
    // nowhere in the database, only its digest.
    wait_until(
        &app.pool,
        "SELECT 'sent' FROM mail_outbox WHERE to_address = 'ada@example.com' AND sent_at IS NOT NULL",
    )
    .await;
    let (id, params): (uuid::Uuid, String) = sqlx::query_as(
        "SELECT id, params::text FROM mail_outbox WHERE to_address = 'ada@example.com'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("the outbox row");
    assert_eq!(mail.message_id, format!("{id}@admitone.test"));
    let token = token_of(&link);
    let dump: String = sqlx::query_scalar(
        "SELECT concat((SELECT string_agg(m::text, ',') FROM mail_outbox m),
                       (SELECT string_agg(l::text, ',') FROM signup_links l))",
    )
    .fetch_one(&app.pool)
    .await
    .expect("dump");
    assert!(
        !dump.contains(&token),
        "the link's secret is stored nowhere"
    );
    assert!(!params.contains(&token));
    let digest: Vec<u8> = sqlx::query_scalar("SELECT digest FROM signup_links")
        .fetch_one(&app.pool)
        .await
        .expect("digest");
    assert_eq!(digest, Sha256::digest(token.as_bytes()).to_vec());
}

#[sqlx::test(migrations = "../migrations")]
async fn the_same_mail_in_english_for_an_english_request(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    register(&app, "ada@example.com", "en-GB,en;q=0.8").await;
    let mail = sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
    assert_eq!(mail.subject, "Finish creating your account");
    assert!(mail.text.contains("The link works once, for 24 hours."));
}

#[sqlx::test(migrations = "../migrations")]
async fn the_relay_signs_in_to_the_smtp_server_with_the_urls_credentials(pool: PgPool) {
    let sink = SmtpSink::start_with_auth("relay-user", "relay-secret").await;
    let mut settings = mail_settings(&sink);
    settings.mail.smtp_url = Some(SecretString::from(
        sink.url_with("relay-user", "relay-secret"),
    ));
    let app = spawn_app_with(pool, settings).await;
    register(&app, "ada@example.com", "en").await;
    let mail = sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
    assert_eq!(mail.auth_user.as_deref(), Some("relay-user"));
}

/// Wrong credentials (a `535`) are the operator's to fix, not the mail's
/// fault: the mail stays queued and is tried again, never dead-lettered at
/// once; after the last attempt it waits for `server admin requeue-mail`.
#[sqlx::test(migrations = "../migrations")]
async fn wrong_smtp_credentials_keep_the_mail_queued_until_fixed(pool: PgPool) {
    let sink = SmtpSink::start_with_auth("relay-user", "relay-secret").await;
    let mut settings = mail_settings(&sink);
    settings.mail.smtp_url = Some(SecretString::from(sink.url_with("relay-user", "wrong")));
    settings.mail.max_attempts = 3;
    let app = spawn_app_with(pool.clone(), settings).await;
    register(&app, "ada@example.com", "en").await;
    let error = wait_until(
        &app.pool,
        "SELECT last_error FROM mail_outbox WHERE attempts >= 2",
    )
    .await;
    assert!(error.starts_with("535"), "{error}");
    assert!(sink.received().is_empty());
    // Dead only after the last attempt, never at the first refusal.
    wait_until(
        &app.pool,
        "SELECT 'dead' FROM mail_outbox WHERE dead_at IS NOT NULL",
    )
    .await;
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM mail_outbox")
        .fetch_one(&app.pool)
        .await
        .expect("row");
    assert_eq!(attempts, 3);

    // Fixed credentials, requeued: it goes out.
    drop(app);
    let mut fixed = mail_settings(&sink);
    fixed.mail.smtp_url = Some(SecretString::from(
        sink.url_with("relay-user", "relay-secret"),
    ));
    let app = spawn_app_with(pool, fixed).await;
    let requeue = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_server"))
            .args(["admin", "requeue-mail"])
            .env(
                "DATABASE_URL",
                crate::support::processes::database_url_of(&app.pool),
            )
            .env("RUST_LOG", "warn")
            .output()
            .expect("run the server binary");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    // A mail whose link was used meanwhile is nobody's need any more.
    let set_used = |used: bool| {
        sqlx::query("UPDATE signup_links SET used_at = CASE WHEN $1 THEN now() END")
            .bind(used)
            .execute(&app.pool)
    };
    set_used(true).await.expect("use the link");
    assert_eq!(requeue(), "requeued 0 dead-lettered mail(s)");
    set_used(false).await.expect("reopen the link");
    assert_eq!(requeue(), "requeued 1 dead-lettered mail(s)");
    sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
}

/// A server that accepts the connection and then never answers costs one
/// attempt of `mail.timeout_ms`, not the relay: the attempt is recorded as
/// timed out, and the mail goes once the server answers again.
#[sqlx::test(migrations = "../migrations")]
async fn a_server_that_hangs_costs_an_attempt_not_the_relay(pool: PgPool) {
    let sink = SmtpSink::start().await;
    sink.stall(true);
    let mut settings = mail_settings(&sink);
    settings.mail.timeout_ms = 300;
    let app = spawn_app_with(pool, settings).await;
    register(&app, "ada@example.com", "en").await;
    let error = wait_until(
        &app.pool,
        "SELECT last_error FROM mail_outbox WHERE attempts >= 1",
    )
    .await;
    assert_eq!(error, "the SMTP server timed out");
    sink.stall(false);
    sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
}

#[sqlx::test(migrations = "../migrations")]
async fn a_server_that_says_later_is_tried_again_until_the_mail_is_taken(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    sink.fail_next_transient(2);
    register(&app, "ada@example.com", "en").await;
    sink.wait_for("ada@example.com", "Finish", MAIL_WAIT).await;
    let attempts = wait_until(
        &app.pool,
        "SELECT attempts::text FROM mail_outbox WHERE sent_at IS NOT NULL",
    )
    .await;
    assert_eq!(attempts, "3", "two refusals, then delivered");
    assert_eq!(sink.received().len(), 1, "delivered once");
}

/// A refusal (`550`) is tried again until the attempts run out, then
/// dead-lettered: a reply code cannot tell a mailbox that does not exist
/// from a sender the relay refuses (a typo in `mail.from`), which must not
/// lose mail at the first attempt.
#[sqlx::test(migrations = "../migrations")]
async fn a_refused_mail_is_tried_until_its_attempts_run_out(pool: PgPool) {
    let sink = SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.mail.max_attempts = 3;
    let app = spawn_app_with(pool, settings).await;
    sink.fail_next_permanent(3);
    register(&app, "ada@example.com", "en").await;
    let error = wait_until(
        &app.pool,
        "SELECT last_error FROM mail_outbox WHERE dead_at IS NOT NULL",
    )
    .await;
    assert!(error.starts_with("550"), "{error}");
    let attempts: i32 = sqlx::query_scalar("SELECT attempts FROM mail_outbox")
        .fetch_one(&app.pool)
        .await
        .expect("row");
    assert_eq!(attempts, 3, "every attempt used, no more");
    // Later rounds leave it alone, even once its retry time has come
    // (moved here to now rather than waited for). The positive control: a
    // mail queued after the death is delivered, so at least one later round
    // ran, and it did not touch the dead one.
    sqlx::query("UPDATE mail_outbox SET next_attempt_at = now() - interval '1 hour'")
        .execute(&app.pool)
        .await
        .expect("due now");
    register(&app, "bob@example.com", "en").await;
    sink.wait_for("bob@example.com", "Finish", MAIL_WAIT).await;
    // Taken by the server, then recorded: wait for the record too.
    wait_until(
        &app.pool,
        "SELECT 'sent' FROM mail_outbox WHERE to_address = 'bob@example.com' AND sent_at IS NOT NULL",
    )
    .await;
    let received: Vec<Vec<String>> = sink.received().into_iter().map(|m| m.to).collect();
    assert_eq!(received, [["bob@example.com"]], "the dead mail stays dead");
    let attempts: i32 =
        sqlx::query_scalar("SELECT attempts FROM mail_outbox WHERE dead_at IS NOT NULL")
            .fetch_one(&app.pool)
            .await
            .expect("row");
    assert_eq!(attempts, 3, "no attempt after death");
    let (pending, dead) = engine::mail::backlog(&app.pool).await.expect("backlog");
    assert_eq!((pending, dead), (0, 1));
}

/// A relay that dies after the SMTP server took a mail and before it
/// recorded that: nobody sends the mail again while the lease lives, it is
/// sent again (once) when the lease has run out, and it is never lost.
#[sqlx::test(migrations = "../migrations")]
async fn a_crash_between_sending_and_recording_sends_again_once_per_lease_never_loses(
    pool: PgPool,
) {
    let sink = SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.mail.relay = false; // the test runs the relays
    settings.mail.timeout_ms = 1_000; // lease = 2 × 1 s + 5 s
    let app = spawn_app_with(pool, settings.clone()).await;
    register(&app, "ada@example.com", "en").await;
    let relay = |pool: &PgPool| {
        MailRelay::new(
            pool.clone(),
            &settings.mail,
            Arc::new(link_key()),
            Arc::new(settings.keyring().expect("keyring")),
            "http://127.0.0.1:3000",
        )
        .expect("relay")
    };
    let (crashing, survivor) = (relay(&app.pool), relay(&app.pool));

    let leased = crashing.claim().await.expect("claim");
    assert_eq!(leased.len(), 1);
    let sent = crashing.send(&leased[0]).await;
    assert!(
        matches!(sent, engine::delivery::Attempted::Delivered { .. }),
        "{sent:?}"
    );
    // ... and the relay dies here: nothing recorded.
    assert_eq!(sink.received().len(), 1);

    // While the lease lives, another relay does not send it again.
    for _ in 0..3 {
        assert!(survivor.round().await.expect("round").is_idle());
    }
    assert_eq!(sink.received().len(), 1, "not twice within one lease");

    // The lease runs out: the mail goes again, once, and is recorded.
    tokio::time::sleep(crashing.lease() + Duration::from_millis(200)).await;
    let round = survivor.round().await.expect("round");
    assert_eq!(round.sent, 1, "{round:?}");
    let copies = sink.received();
    assert_eq!(copies.len(), 2, "sent again after the lease, not lost");
    assert_eq!(
        copies[0].message_id, copies[1].message_id,
        "recognisably the same mail"
    );
    for _ in 0..3 {
        assert!(survivor.round().await.expect("round").is_idle());
    }
    assert_eq!(sink.received().len(), 2, "and no more");
    // The crashed relay's late record changes nothing: its lease is gone.
    let late = crashing.record(&leased[0], &sent).await.expect("record");
    assert_eq!(late, engine::delivery::Recorded::LeaseLost);
    let attempts: i32 =
        sqlx::query_scalar("SELECT attempts FROM mail_outbox WHERE sent_at IS NOT NULL")
            .fetch_one(&app.pool)
            .await
            .expect("sent");
    assert_eq!(attempts, 2);
}

/// A round records each of its attempts whatever became of the others:
/// when its deliveries cannot be recorded (the database refused), the
/// refusal it met is still recorded (its backoff and its error), and the
/// round reports the failure. The delivered mail keeps its lease and goes
/// again when that runs out.
#[sqlx::test(migrations = "../migrations")]
async fn a_round_whose_deliveries_cannot_be_recorded_still_records_its_refusals(pool: PgPool) {
    let sink = SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.mail.relay = false; // the test runs the relay
    let app = spawn_app_with(pool, settings.clone()).await;
    register(&app, "ada@example.com", "en").await;
    register(&app, "bob@example.com", "en").await;
    sqlx::raw_sql(
        "CREATE FUNCTION refuse_sent() RETURNS trigger LANGUAGE plpgsql AS
           $$ BEGIN RAISE EXCEPTION 'recording sent mail refused'; END $$;
         CREATE TRIGGER refuse_sent BEFORE UPDATE ON mail_outbox FOR EACH ROW
           WHEN (NEW.sent_at IS NOT NULL) EXECUTE FUNCTION refuse_sent();",
    )
    .execute(&app.pool)
    .await
    .expect("trigger");
    sink.fail_next_permanent(1);
    let relay = MailRelay::new(
        app.pool.clone(),
        &settings.mail,
        Arc::new(link_key()),
        Arc::new(settings.keyring().expect("keyring")),
        "http://127.0.0.1:3000",
    )
    .expect("relay");
    let round = relay.round().await;
    assert!(round.is_err(), "the round reports it: {round:?}");
    assert_eq!(sink.received().len(), 1, "one delivered, one refused");
    let errors: Vec<Option<String>> =
        sqlx::query_scalar("SELECT last_error FROM mail_outbox ORDER BY last_error NULLS LAST")
            .fetch_all(&app.pool)
            .await
            .expect("rows");
    assert_eq!(errors.len(), 2);
    assert!(
        errors[0].as_deref().is_some_and(|e| e.starts_with("550")),
        "the refusal is recorded: {errors:?}"
    );
    assert_eq!(errors[1], None, "the delivery is not: {errors:?}");
    let unsent: i64 = sqlx::query_scalar("SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(unsent, 2, "nothing marked sent");
}

/// Several relays (instances) at once send each mail once.
#[sqlx::test(migrations = "../migrations")]
async fn relays_running_at_once_send_each_mail_once(pool: PgPool) {
    let sink = SmtpSink::start().await;
    let mut settings = mail_settings(&sink);
    settings.mail.relay = false;
    let app = spawn_app_with(pool, settings.clone()).await;
    for i in 0..12 {
        register(&app, &format!("learner{i}@example.com"), "en").await;
    }
    let relays: Vec<MailRelay> = (0..3)
        .map(|_| {
            MailRelay::new(
                app.pool.clone(),
                &settings.mail,
                Arc::new(link_key()),
                Arc::new(settings.keyring().expect("keyring")),
                "http://127.0.0.1:3000",
            )
            .expect("relay")
        })
        .collect();
    let runs = relays.into_iter().map(|relay| {
        tokio::spawn(async move {
            for _ in 0..20 {
                relay.round().await.expect("round");
            }
        })
    });
    for run in runs {
        run.await.expect("relay task");
    }
    let received = sink.received();
    assert_eq!(received.len(), 12, "every mail once");
    let mut ids: Vec<&str> = received.iter().map(|m| m.message_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 12, "no mail twice");
}

/// The lease itself, without SMTP: relays leasing at the same moment never
/// lease one mail twice. A relay whose statement began before another's
/// lease committed must see that lease on the row it takes (the due time
/// is checked again there), else both send.
#[sqlx::test(migrations = "../migrations")]
async fn relays_leasing_at_once_never_lease_a_mail_twice(pool: PgPool) {
    let lease = Duration::from_secs(600);
    for round in 0..6 {
        sqlx::query(
            "INSERT INTO mail_outbox (id, template, to_address, lang)
             SELECT gen_random_uuid(), 'password_changed', 'learner' || n || '@example.com', 'en'
               FROM generate_series(1, 200) AS n",
        )
        .execute(&pool)
        .await
        .expect("mails");
        let claimers = (0..8).map(|_| {
            let pool = pool.clone();
            tokio::spawn(async move {
                let mut leased = Vec::new();
                // Every claimer keeps claiming until nothing is left to
                // lease, so all eight race to the last row.
                loop {
                    let due =
                        engine::mail::claim_due(&pool, 3, lease, engine::mail::MailLimits::none())
                            .await
                            .expect("claim");
                    if due.is_empty() {
                        let left: i64 = sqlx::query_scalar(
                            "SELECT count(*) FROM mail_outbox
                             WHERE sent_at IS NULL AND next_attempt_at <= now()",
                        )
                        .fetch_one(&pool)
                        .await
                        .expect("left");
                        if left == 0 {
                            return leased;
                        }
                    }
                    leased.extend(due.into_iter().map(|m| (m.id, m.attempt)));
                }
            })
        });
        let mut leased: Vec<(uuid::Uuid, i32)> = Vec::new();
        for claimer in futures::future::join_all(claimers).await {
            leased.extend(claimer.expect("claimer"));
        }
        let mut mails: Vec<uuid::Uuid> = leased.iter().map(|(id, _)| *id).collect();
        mails.sort();
        mails.dedup();
        assert_eq!(
            (mails.len(), leased.len()),
            (200, 200),
            "round {round}: a mail was leased twice"
        );
        assert!(
            leased.iter().all(|(_, attempt)| *attempt == 1),
            "round {round}"
        );
        sqlx::query("UPDATE mail_outbox SET sent_at = now() WHERE sent_at IS NULL")
            .execute(&pool)
            .await
            .expect("settle");
    }
}

#[sqlx::test(migrations = "../migrations")]
async fn without_an_smtp_server_development_mail_lands_in_the_dev_mailbox(pool: PgPool) {
    let app = spawn_app(pool).await;
    register(&app, "ada@example.com", "en").await;
    let deadline = tokio::time::Instant::now() + MAIL_WAIT;
    let page = loop {
        let page = app.get("/dev/mailbox").await.text().await.expect("page");
        if page.contains("Finish creating your account") {
            break page;
        }
        assert!(tokio::time::Instant::now() < deadline, "{page}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(page.contains("ada@example.com"));
    assert!(
        page.contains("<a href=\"http://127.0.0.1:3000/register/finish?token="),
        "{page}"
    );
    let id: uuid::Uuid = sqlx::query_scalar("SELECT id FROM dev_mailbox")
        .fetch_one(&app.pool)
        .await
        .expect("kept");
    let html = app.get(&format!("/dev/mailbox/{id}")).await;
    assert_eq!(html.status(), 200);
    let csp = html.headers()["content-security-policy"]
        .to_str()
        .expect("ascii")
        .to_owned();
    assert!(csp.contains("sandbox"), "{csp}");
    assert!(
        html.text()
            .await
            .expect("html")
            .contains("Finish my account")
    );
}

/// The dev mailbox shows every reset link: only to this machine, never
/// through a proxy, and a development server on another address has none
/// (its mail waits until an SMTP server is configured).
#[sqlx::test(migrations = "../migrations")]
async fn the_dev_mailbox_is_for_this_machine_only(pool: PgPool) {
    let local = spawn_app(pool.clone()).await;
    let relayed = new_client()
        .get(format!("{}/dev/mailbox", local.address))
        .header("x-forwarded-for", "203.0.113.9")
        .send()
        .await
        .expect("request");
    assert_eq!(relayed.status(), 404, "through a proxy");
    drop(local);

    // The positive control: on loopback the same mail reaches the dev
    // mailbox, and how long that took bounds the wait below.
    let local = spawn_app(pool.clone()).await;
    let started = tokio::time::Instant::now();
    register(&local, "zed@example.com", "en").await;
    wait_until(
        &pool,
        "SELECT to_address FROM dev_mailbox WHERE to_address = 'zed@example.com'",
    )
    .await;
    let delivery = started.elapsed();
    drop(local);

    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.server.host = "0.0.0.0".into();
    let open = spawn_app_with(pool, settings).await;
    assert_eq!(open.get("/dev/mailbox").await.status(), 404);
    register(&open, "ada@example.com", "en").await;
    tokio::time::sleep((delivery * 5).clamp(Duration::from_millis(500), Duration::from_secs(10)))
        .await;
    let (attempts, sent): (i32, bool) = sqlx::query_as(
        "SELECT attempts, sent_at IS NOT NULL FROM mail_outbox \
         WHERE to_address = 'ada@example.com'",
    )
    .fetch_one(&open.pool)
    .await
    .expect("queued");
    assert_eq!((attempts, sent), (0, false), "waits, delivered nowhere");
    let kept: Vec<String> = sqlx::query_scalar("SELECT to_address FROM dev_mailbox")
        .fetch_all(&open.pool)
        .await
        .expect("rows");
    assert_eq!(kept, ["zed@example.com"], "only the loopback server's mail");
}

#[sqlx::test(migrations = "../migrations")]
async fn with_an_smtp_server_there_is_no_dev_mailbox(pool: PgPool) {
    let (app, _sink) = spawn_app_with_mail(pool).await;
    let page = app.get("/dev/mailbox").await;
    assert_eq!(page.status(), 404);
}

/// An address stored before registration refused display forms is never
/// read as one: `ada<victim@example.com>` is refused as invalid (dead at
/// once), not mailed to `victim@example.com`. The positive control: a
/// mail queued after it arrives.
#[sqlx::test(migrations = "../migrations")]
async fn a_display_form_address_is_refused_never_mailed_to_its_inner_address(pool: PgPool) {
    let (app, sink) = spawn_app_with_mail(pool).await;
    sqlx::query(
        "INSERT INTO mail_outbox (id, template, to_address, lang)
         VALUES (gen_random_uuid(), 'password_changed', 'ada<victim@example.com>', 'en')",
    )
    .execute(&app.pool)
    .await
    .expect("queued");
    let error = wait_until(
        &app.pool,
        "SELECT last_error FROM mail_outbox WHERE dead_at IS NOT NULL",
    )
    .await;
    assert_eq!(error, "the recipient is not a valid address");
    register(&app, "bob@example.com", "en").await;
    sink.wait_for("bob@example.com", "Finish", MAIL_WAIT).await;
    let received: Vec<Vec<String>> = sink.received().into_iter().map(|m| m.to).collect();
    assert_eq!(received, [["bob@example.com"]], "nothing to the victim");
}

/// `requeue-mail` gives a dead mail another try while its link still
/// works. Each kind of link lives in the table of what it does; a
/// transfer's confirmation link lives in `transfer_requests`, which the
/// requeue did not look in, so a transfer's mail that died while the SMTP
/// server was down stayed dead for good, its link unusable by anyone.
#[sqlx::test(migrations = "../migrations")]
async fn a_dead_mail_is_requeued_while_its_link_works_whatever_kind_of_link(pool: PgPool) {
    use crate::support::course::{admin, learners};
    use crate::support::transfers::{ask, bound_course, email_of};
    let mut settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    settings.mail.relay = false; // the mails stay queued: this test kills them
    let app = spawn_app_with(pool, settings).await;
    let owner = admin(&app).await;
    let (course, _, (_, ann)) = bound_course(&app, &owner, 1).await;
    let bob = learners(&app, 1).await.remove(0);
    let asked = ask(
        &app,
        &ann,
        &course,
        serde_json::json!({ "email": email_of(bob.0) }),
    )
    .await;
    assert_eq!(
        asked.status(),
        201,
        "{}",
        asked.text().await.unwrap_or_default()
    );
    let signup = crate::support::mail::signup_token(&app.pool, "new@example.com").await;
    assert!(!signup.is_empty());
    let kill = || {
        sqlx::query("UPDATE mail_outbox SET dead_at = now() WHERE template IN ('transfer_confirm', 'sign_up')")
            .execute(&app.pool)
    };
    kill().await.expect("dead letters");
    assert_eq!(
        engine::mail::requeue_dead(&app.pool, 7)
            .await
            .expect("requeue"),
        2,
        "the transfer's and the registration's mails"
    );
    // Once the links no longer work, nobody needs their mails.
    sqlx::query("UPDATE transfer_requests SET status = 'cancelled', decided_at = now()")
        .execute(&app.pool)
        .await
        .expect("cancel");
    sqlx::query("UPDATE signup_links SET used_at = now()")
        .execute(&app.pool)
        .await
        .expect("use");
    kill().await.expect("dead letters");
    assert_eq!(
        engine::mail::requeue_dead(&app.pool, 7)
            .await
            .expect("requeue"),
        0
    );
}
