//! `server`: the AdmitOne binary. See `server --help`.

use std::{path::PathBuf, process::ExitCode};

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use secrecy::ExposeSecret as _;
use server::{
    bootstrap,
    config::Settings,
    startup::{Application, shutdown_signal},
    telemetry,
};

/// `server reconcile`'s exit status when another reconciler holds the lock.
const RECONCILE_SKIPPED: u8 = 3;
/// `server admin create-tenant`'s exit status when it refuses (nothing was
/// written): the admin email belongs to an account not proven to be the
/// operator's, or the slug belongs to a tenant the account does not own.
const UNVERIFIED_ADMIN: u8 = 4;

#[derive(Parser)]
#[command(name = "server", version, about = "AdmitOne: one person, one code.")]
struct Cli {
    /// TOML configuration file (also `APP_CONFIG`); `APP_…` variables override it.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve HTTP (the default).
    Serve,
    /// Create the database if needed and apply pending migrations.
    Migrate,
    /// Check every invariant in SQL, and audit Redis's reservations. Exit
    /// status: 0 all hold, 1 a violation, an error, or Redis not audited,
    /// 3 skipped: another reconciler is running, nothing was checked.
    Reconcile {
        /// Also fix counter drift (a share's used quota); never bindings.
        #[arg(long)]
        repair: bool,
    },
    /// Write Brotli and gzip copies of the built site's assets beside them
    /// (run after `cargo leptos build`; `/pkg` serves them to browsers that
    /// accept them).
    Precompress {
        /// The assets' directory (default: the site root's `pkg`).
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Operator tasks.
    Admin {
        #[command(subcommand)]
        command: AdminCommand,
    },
    /// Local development helpers (refused in production).
    Dev {
        #[command(subcommand)]
        command: DevCommand,
    },
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Create a tenant and its first owner; prints the tenant id.
    /// Idempotent on the slug. Exits 4 (writing nothing) when the email's
    /// existing account is not proven the operator's, or the slug is
    /// another account's tenant.
    CreateTenant {
        #[arg(long)]
        slug: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        admin_email: String,
        /// The admin's display name (defaults to the email's local part).
        #[arg(long)]
        admin_name: Option<String>,
        /// A file holding the admin's password (one line).
        #[arg(long)]
        admin_password_file: PathBuf,
    },
    /// Disable an account: it cannot sign in any more and its sessions end.
    DisableAccount {
        #[arg(long)]
        email: String,
    },
    /// Give the dead-lettered mails of the last days one more attempt each
    /// (once the SMTP server, its credentials or mail.from are fixed),
    /// except those whose link is used or expired; prints how many.
    RequeueMail {
        /// How far back, in days.
        #[arg(long, default_value_t = 7)]
        days: u32,
    },
}

#[derive(Subcommand)]
enum DevCommand {
    /// Create (or refresh) the demo tenant, admin and learner, and print
    /// their credentials.
    SeedDemo,
}

#[tokio::main]
async fn main() -> ExitCode {
    match run().await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the command. Every way out returns here, never `process::exit`,
/// so that the telemetry guard flushes queued traces on the way.
async fn run() -> anyhow::Result<ExitCode> {
    let cli = Cli::parse();
    let settings = Settings::load(cli.config.as_deref())?;
    // Flushes queued traces when `run` returns.
    let _telemetry = telemetry::init(&settings.log)?;
    let database_url = settings.database.url.expose_secret().to_owned();
    match cli.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let every = settings.settlement.reconcile_interval_secs;
            if every > 0 {
                let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
                let reservations = reservation_audit(&settings).await;
                server::reconcile::spawn_periodic(
                    pool,
                    reservations,
                    std::time::Duration::from_secs(every),
                );
            }
            let webhook_relay = if settings.webhooks.relay {
                let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
                Some((
                    server::relay::Relay::new(pool, &settings.webhooks)?,
                    std::time::Duration::from_millis(settings.webhooks.poll_interval_ms.max(10)),
                ))
            } else {
                None
            };
            let mut app = Application::build(settings).await?;
            if let Some((relay, idle)) = webhook_relay {
                relay.spawn(app.rounds(), idle);
            }
            tracing::info!(port = app.port(), "listening");
            app.run_until(shutdown_signal()).await?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Precompress { dir } => {
            let dir = dir.unwrap_or_else(|| PathBuf::from(&settings.server.site_root).join("pkg"));
            for file in server::assets::precompress(&dir)? {
                println!(
                    "{}: {} bytes, gzip {}, brotli {}",
                    file.path.display(),
                    file.raw,
                    file.gzip,
                    file.brotli
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Migrate => {
            engine::db::migrate(&database_url, &settings.failover_hosts()?).await?;
            println!("migrations applied");
            Ok(ExitCode::SUCCESS)
        }
        Command::Reconcile { repair } => {
            let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
            let reservations = reservation_audit(&settings).await;
            let report = server::reconcile::reconcile(&pool, reservations.as_ref(), repair).await?;
            if report.skipped {
                println!("skipped: another reconciler is running");
                // Not a pass: nothing was checked (a cron must not read "ok").
                return Ok(ExitCode::from(RECONCILE_SKIPPED));
            }
            for check in &report.checks {
                let verdict = if check.violations == 0 {
                    "ok".to_owned()
                } else {
                    format!("VIOLATED ({})", check.violations)
                };
                println!("{verdict:>14}  {}", check.name);
            }
            if let Some(reason) = &report.reservations_not_checked {
                println!(
                    "{:>14}  {} ({reason})",
                    "NOT CHECKED",
                    server::reconcile::RESERVATIONS_CHECK
                );
            }
            if report.reservations_removed > 0 {
                println!(
                    "removed {} stale Redis reservation(s)",
                    report.reservations_removed
                );
            }
            if report.repaired > 0 {
                println!("repaired the used quota of {} share(s)", report.repaired);
            }
            anyhow::ensure!(
                report.violations() == 0,
                "{} invariant violation(s)",
                report.violations()
            );
            // Not a pass either: a cron must not read "ok" for Redis unseen.
            anyhow::ensure!(
                report.reservations_not_checked.is_none(),
                "the Redis reservation audit did not run"
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin {
            command:
                AdminCommand::CreateTenant {
                    slug,
                    name,
                    admin_email,
                    admin_name,
                    admin_password_file,
                },
        } => {
            let new = bootstrap::NewTenant::parse(
                &slug,
                &name,
                &admin_email,
                admin_name.as_deref(),
                &admin_password_file,
            )?;
            let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
            let created = match bootstrap::create_tenant(&pool, &new).await {
                Ok(created) => created,
                Err(
                    refusal @ (bootstrap::CreateTenantError::UntrustedAccount { .. }
                    | bootstrap::CreateTenantError::TenantTaken { .. }),
                ) => {
                    eprintln!("error: {refusal}");
                    return Ok(ExitCode::from(UNVERIFIED_ADMIN));
                }
                Err(error) => return Err(error.into()),
            };
            if !created.tenant_created {
                eprintln!("tenant {slug:?} already existed, owned by this account");
            }
            if !created.admin_created {
                eprintln!(
                    "account {admin_email:?} already existed; its password was left unchanged"
                );
            }
            println!("{}", created.tenant_id);
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin {
            command: AdminCommand::DisableAccount { email },
        } => {
            // Found by the looser rules: an account made under them can
            // still be disabled.
            let email = engine::accounts::EmailToFind::parse(&email).context("--email")?;
            let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
            let account = engine::accounts::find_by_email(&pool, &email)
                .await?
                .with_context(|| format!("no account has the email {email}"))?;
            engine::accounts::disable(&pool, account).await?;
            println!("disabled {email}");
            Ok(ExitCode::SUCCESS)
        }
        Command::Admin {
            command: AdminCommand::RequeueMail { days },
        } => {
            let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
            let requeued = engine::mail::requeue_dead(&pool, days).await?;
            println!("requeued {requeued} dead-lettered mail(s)");
            Ok(ExitCode::SUCCESS)
        }
        Command::Dev {
            command: DevCommand::SeedDemo,
        } => {
            anyhow::ensure!(
                !settings.is_production(),
                "refusing to seed demo accounts with public passwords in production"
            );
            let pool = engine::db::connect_lazy(&database_url, &settings.db_options())?;
            let storage = engine::storage::Storage::new(&settings.storage_config()?)?;
            let demo = bootstrap::seed_demo(&pool, &storage, &settings.keyring()?)
                .await
                .context("seeding the demo")?;
            let credentials = &bootstrap::DEMO;
            println!(
                "Demo tenant {:?} ({})",
                credentials.tenant_slug, demo.tenant
            );
            println!(
                "  admin:   {}  password: {}",
                credentials.admin_email, credentials.admin_password
            );
            println!(
                "  learner: {}  password: {}",
                credentials.learner_email, credentials.learner_password
            );
            let origin = settings.public_origin();
            println!("  course:  {origin}/s/{}", demo.course_slug);
            match demo.learner_code {
                Some(code) => println!("  a fresh access code for the learner: {code}"),
                None => println!("  the demo learner already holds the course"),
            }
            if settings.dev_mailbox() {
                println!(
                    "  mail (verification, password reset, invitations): {origin}/dev/mailbox"
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The reconciler's view of Redis, if it can be reached: reservations may
/// live at most the configured TTL.
async fn reservation_audit(settings: &Settings) -> Option<server::reconcile::Reservations> {
    match engine::coordination::Redis::connect(&settings.redis_options()).await {
        Ok(redis) => Some(server::reconcile::Reservations {
            redis,
            ttl: settings.settlement_options().reservation_ttl,
        }),
        Err(error) => {
            tracing::warn!(
                error = format!("{error:#}"),
                "Redis unreachable: reservations not audited"
            );
            None
        }
    }
}
