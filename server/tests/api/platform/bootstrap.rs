//! The operator's commands: `create-tenant` (idempotent on its slug, bad
//! input refused, an owner account made or accepted only when it is the
//! operator's own) and the demo seed (idempotent, its credentials work).

use engine::accounts::{Email, Password, verify_password};
use secrecy::SecretString;
use server::bootstrap::{DEMO, seed_demo};
use sqlx::PgPool;

fn run_server(pool: &PgPool, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_server"))
        .args(args)
        .env(
            "DATABASE_URL",
            crate::support::processes::database_url_of(pool),
        )
        .env("RUST_LOG", "warn")
        .output()
        .expect("run the server binary")
}

#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_is_idempotent_on_slug_and_prints_the_id(pool: PgPool) {
    let dir = std::env::temp_dir().join(format!("admitone-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let password_file = dir.join("password");
    std::fs::write(&password_file, "a long enough password\n").expect("write");
    let args = [
        "admin",
        "create-tenant",
        "--slug",
        "acme",
        "--name",
        "Acme Courses",
        "--admin-email",
        "Owner@Acme.example",
        "--admin-password-file",
        password_file.to_str().expect("utf-8 path"),
    ];

    let first = run_server(&pool, &args);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let second = run_server(&pool, &args);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let id = String::from_utf8(first.stdout).expect("utf-8");
    let id = id.trim();
    assert_eq!(id, String::from_utf8(second.stdout).expect("utf-8").trim());
    let id: uuid::Uuid = id.parse().expect("prints a uuid");

    let (tenants, admins): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tenants WHERE slug = 'acme'),
                (SELECT count(*) FROM tenant_members m JOIN accounts a ON a.id = m.account_id
                  WHERE m.tenant_id = $1 AND m.role = 'owner' AND a.email = 'owner@acme.example')",
    )
    .bind(id)
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!((tenants, admins), (1, 1));
    let _ = std::fs::remove_dir_all(dir);
}

#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_rejects_bad_input_and_changes_nothing(pool: PgPool) {
    let dir = std::env::temp_dir().join(format!("admitone-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let short = dir.join("short");
    std::fs::write(&short, "short\n").expect("write");
    let good = dir.join("good");
    std::fs::write(&good, "a long enough password\n").expect("write");
    let cases: [(&str, &str, &std::path::Path, &str); 4] = [
        ("Bad Slug", "owner@acme.example", &good, "--slug"),
        ("acme", "not-an-email", &good, "--admin-email"),
        (
            "acme",
            "owner@acme.example",
            &short,
            "--admin-password-file",
        ),
        (
            "acme",
            "owner@acme.example",
            &dir.join("missing"),
            "password file",
        ),
    ];
    for (slug, email, file, complaint) in cases {
        let out = run_server(
            &pool,
            &[
                "admin",
                "create-tenant",
                "--slug",
                slug,
                "--name",
                "Acme",
                "--admin-email",
                email,
                "--admin-password-file",
                file.to_str().expect("utf-8"),
            ],
        );
        assert!(!out.status.success(), "{slug} {email} must fail");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(complaint),
            "error should name {complaint}: {stderr}"
        );
    }
    let counts: (i64, i64) =
        sqlx::query_as("SELECT (SELECT count(*) FROM tenants), (SELECT count(*) FROM accounts)")
            .fetch_one(&pool)
            .await
            .expect("count");
    assert_eq!(counts, (0, 0), "nothing was written");
    let _ = std::fs::remove_dir_all(dir);
}

#[sqlx::test(migrations = "../migrations")]
async fn demo_seed_is_idempotent_and_its_credentials_work(pool: PgPool) {
    let settings = crate::support::app::test_settings(&crate::support::app::redis_url());
    let storage = engine::storage::Storage::new(&settings.storage_config().expect("storage"))
        .expect("storage");
    let keyring = settings.keyring().expect("keyring");
    let first = seed_demo(&pool, &storage, &keyring).await.expect("seed");
    let second = seed_demo(&pool, &storage, &keyring)
        .await
        .expect("seed again");
    assert_eq!(first.tenant, second.tenant);
    assert_eq!(first.course_slug, second.course_slug);
    // The learner holds no code yet: each run hands out a fresh one.
    let (a, b) = (
        first.learner_code.expect("a code"),
        second.learner_code.expect("another code"),
    );
    assert_ne!(a, b);
    let courses: i64 = sqlx::query_scalar("SELECT count(*) FROM shares WHERE slug = 'demo-course'")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(courses, 1, "one demo course however often it runs");

    for (email, password) in [
        (DEMO.admin_email, DEMO.admin_password),
        (DEMO.learner_email, DEMO.learner_password),
    ] {
        let email = Email::parse(email).expect("email");
        let hash: String =
            sqlx::query_scalar("SELECT password_hash FROM accounts WHERE email = $1")
                .bind(email.as_str())
                .fetch_one(&pool)
                .await
                .expect("account exists once");
        let password = Password::parse(SecretString::from(password)).expect("password");
        assert!(verify_password(&password, &hash).await.expect("verify"));
    }
    let admins: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id WHERE t.slug = 'demo'",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(admins, 1);
}

/// Registers `email` as anyone could from the web before registration
/// started from the address: its address unverified.
async fn self_register(pool: &PgPool, email: &str, password: &str) -> engine::accounts::AccountId {
    crate::support::app::unverified_account(pool, email, password).await
}

/// Runs `create-tenant` for acme with `owner@acme.example` and `password`.
fn create_acme(pool: &PgPool, password: &str) -> std::process::Output {
    let dir = std::env::temp_dir().join(format!("admitone-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let password_file = dir.join("password");
    std::fs::write(&password_file, format!("{password}\n")).expect("write");
    let out = run_server(
        pool,
        &[
            "admin",
            "create-tenant",
            "--slug",
            "acme",
            "--name",
            "Acme Courses",
            "--admin-email",
            "owner@acme.example",
            "--admin-password-file",
            password_file.to_str().expect("utf-8"),
        ],
    );
    let _ = std::fs::remove_dir_all(dir);
    out
}

/// Who owns acme now.
async fn acme_owners(pool: &PgPool) -> Vec<uuid::Uuid> {
    sqlx::query_scalar(
        "SELECT m.account_id FROM tenant_members m JOIN tenants t ON t.id = m.tenant_id
          WHERE t.slug = 'acme' AND m.role = 'owner'",
    )
    .fetch_all(pool)
    .await
    .expect("owners")
}

/// The defect: an unverified self-registered account was accepted when the
/// operator's password file held its password (a weak or guessed one, or
/// one a squatter chose to match). An unverified address proves nothing:
/// refused (exit status 4), nothing written, whatever the password.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_refuses_an_unverified_account_even_with_its_password(pool: PgPool) {
    self_register(&pool, "owner@acme.example", "the operator's password").await;
    let out = create_acme(&pool, "the operator's password");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("not verified"), "says why: {stderr}");
    assert!(acme_owners(&pool).await.is_empty());
    let tenants: i64 = sqlx::query_scalar("SELECT count(*) FROM tenants")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(tenants, 0, "nothing was created");
}

/// A verified address proves only that someone opened the mailbox (a mail
/// scanner, or the owner clicking a link they never asked for), not who
/// holds the account: without its password, refused too.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_refuses_a_verified_account_without_its_password(pool: PgPool) {
    let account = self_register(&pool, "owner@acme.example", "the squatter's password").await;
    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(account.0)
        .execute(&pool)
        .await
        .expect("verify");
    let out = create_acme(&pool, "the operator's password");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("does not hold its password"), "{stderr}");
    assert!(acme_owners(&pool).await.is_empty());
}

/// The account's own password and a verified address: the operator's (or
/// the owner's, who gave it): accepted.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_accepts_a_verified_account_with_its_password(pool: PgPool) {
    let account = self_register(&pool, "owner@acme.example", "the owner's own password").await;
    sqlx::query("UPDATE accounts SET email_verified_at = now() WHERE id = $1")
        .bind(account.0)
        .execute(&pool)
        .await
        .expect("verify");
    let out = create_acme(&pool, "the owner's own password");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(acme_owners(&pool).await, vec![account.0]);
}

/// With tenant signup open, a stranger may claim the slug first: the
/// operator's owner never joins that tenant.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_refuses_a_slug_another_account_owns(pool: PgPool) {
    use engine::tenants::{TenantName, TenantSlug, create_with_owner};
    let stranger = self_register(&pool, "stranger@example.com", "the stranger's password").await;
    create_with_owner(
        &pool,
        &TenantSlug::parse("acme").expect("slug"),
        &TenantName::parse("Not Acme").expect("name"),
        stranger,
    )
    .await
    .expect("claimed");
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&pool)
        .await
        .expect("count");
    let out = create_acme(&pool, "the operator's password");
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("already exists"));
    assert_eq!(acme_owners(&pool).await, vec![stranger.0], "unchanged");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM accounts")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(after, before, "nothing written, not even the account");
}

/// Anyone can register the owner's email before the operator runs
/// `create-tenant`: such an account must not become the tenant's owner.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_refuses_a_self_registered_account_and_creates_nothing(pool: PgPool) {
    let squatter = self_register(&pool, "owner@acme.example", "the squatter's password").await;
    let hash_before: String =
        sqlx::query_scalar("SELECT password_hash FROM accounts WHERE id = $1")
            .bind(squatter.0)
            .fetch_one(&pool)
            .await
            .expect("hash");

    let dir = std::env::temp_dir().join(format!("admitone-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let password_file = dir.join("password");
    std::fs::write(&password_file, "the operator's password\n").expect("write");
    let out = run_server(
        &pool,
        &[
            "admin",
            "create-tenant",
            "--slug",
            "acme",
            "--name",
            "Acme Courses",
            "--admin-email",
            "owner@acme.example",
            "--admin-password-file",
            password_file.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(4), "must refuse");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("owner@acme.example") && stderr.contains("already exists"),
        "the refusal names the account and why: {stderr}"
    );
    assert!(out.stdout.is_empty(), "no tenant id printed");

    let (tenants, members, accounts): (i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM tenants), (SELECT count(*) FROM tenant_members),
                (SELECT count(*) FROM accounts)",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(
        (tenants, members, accounts),
        (0, 0, 1),
        "nothing was created"
    );
    let hash_after: String = sqlx::query_scalar("SELECT password_hash FROM accounts WHERE id = $1")
        .bind(squatter.0)
        .fetch_one(&pool)
        .await
        .expect("hash");
    assert_eq!(hash_before, hash_after, "the account is untouched");
    let _ = std::fs::remove_dir_all(dir);
}

/// An account that already administers a tenant is the operator's own: it
/// may be made admin of another one.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_accepts_an_existing_admin_for_a_second_tenant(pool: PgPool) {
    let dir = std::env::temp_dir().join(format!("admitone-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let password_file = dir.join("password");
    std::fs::write(&password_file, "a long enough password\n").expect("write");
    for slug in ["acme", "beta"] {
        let out = run_server(
            &pool,
            &[
                "admin",
                "create-tenant",
                "--slug",
                slug,
                "--name",
                "Courses",
                "--admin-email",
                "owner@acme.example",
                "--admin-password-file",
                password_file.to_str().expect("utf-8"),
            ],
        );
        assert!(
            out.status.success(),
            "{slug}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let admins: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM tenant_members m JOIN accounts a ON a.id = m.account_id
          WHERE a.email = 'owner@acme.example' AND m.role = 'owner'",
    )
    .fetch_one(&pool)
    .await
    .expect("count");
    assert_eq!(admins, 2);
    let _ = std::fs::remove_dir_all(dir);
}

/// A first `create-tenant` that failed after creating its account (a
/// timeout, Ctrl-C) can be run again: the account it created is verified
/// (the operator vouched for the address), so the rerun goes through.
#[sqlx::test(migrations = "../migrations")]
async fn create_tenant_can_be_rerun_after_a_first_run_left_only_the_account(pool: PgPool) {
    use engine::accounts::{DisplayName, ExistingPassword, ensure_account};
    // What the failed first run left behind: the account, no tenant.
    let (account, created) = ensure_account(
        &pool,
        &Email::parse("owner@acme.example").expect("email"),
        &DisplayName::parse("Owner").expect("name"),
        &Password::parse(SecretString::from("the operator's password")).expect("password"),
        ExistingPassword::Keep,
    )
    .await
    .expect("account");
    assert!(created);
    let out = create_acme(&pool, "the operator's password");
    assert!(
        out.status.success(),
        "the rerun succeeds: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        acme_owners(&pool).await,
        vec![account.0],
        "the existing account is the owner"
    );
}
