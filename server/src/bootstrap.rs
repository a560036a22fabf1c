//! Operator bootstrap and the local demo data.
//!
//! `server admin create-tenant` creates a real tenant with its first admin;
//! `server dev seed-demo` gives `make run` a demo tenant with an admin and a
//! learner whose (public, printed) credentials work. Both are idempotent, so
//! running them again is harmless.
//!
//! `create-tenant` never makes a stranger owner. An existing account with
//! the admin email is accepted only when its address is verified (see
//! [`accounts::is_trusted`]) **and** the operator's password file holds its
//! password: anyone may have registered the owner's address first, and a
//! verified flag proves only that someone opened the mailbox (a mail
//! scanner, or the owner clicking a link they did not ask for), not who
//! holds the account. Otherwise the command refuses (exit status 4) without
//! writing anything. Accounts the command creates are verified (the
//! operator vouches for the address) and have the operator's password, so
//! a rerun after a failed first run finds its own account. A tenant that
//! already exists is joined only by one of its owners (with self-signup,
//! a stranger may have claimed the slug).

use anyhow::Context as _;
use engine::db::PgPool;
use engine::{
    accounts::{self, AccountId, DisplayName, Email, EmailToFind, ExistingPassword, Password},
    batches,
    codes::Keyring,
    resources, settlement,
    shares::{self, NewShare, ShareInput},
    storage::Storage,
    tenants::{self, TenantId, TenantName, TenantSlug},
};
use secrecy::SecretString;

/// What `create-tenant` needs.
#[derive(Debug)]
pub struct NewTenant {
    pub slug: TenantSlug,
    pub name: TenantName,
    pub admin_email: Email,
    pub admin_name: DisplayName,
    pub admin_password: Password,
}

impl NewTenant {
    /// Parses the command-line arguments; the password comes from a file so
    /// that it never appears in a process list or shell history.
    pub fn parse(
        slug: &str,
        name: &str,
        admin_email: &str,
        admin_name: Option<&str>,
        password_file: &std::path::Path,
    ) -> anyhow::Result<Self> {
        let password = std::fs::read_to_string(password_file)
            .with_context(|| format!("reading the password file {}", password_file.display()))?;
        let password = password.trim_end_matches(['\r', '\n']).to_owned();
        let admin_email = Email::parse(admin_email).context("--admin-email")?;
        let default_name = admin_email
            .as_str()
            .split('@')
            .next()
            .unwrap_or("admin")
            .to_owned();
        Ok(Self {
            slug: TenantSlug::parse(slug).context("--slug")?,
            name: TenantName::parse(name).context("--name")?,
            admin_name: DisplayName::parse(admin_name.unwrap_or(&default_name))
                .context("--admin-name")?,
            admin_password: Password::parse(SecretString::from(password))
                .context("--admin-password-file")?,
            admin_email,
        })
    }
}

/// The outcome of [`create_tenant`].
#[derive(Debug)]
pub struct CreatedTenant {
    pub tenant_id: TenantId,
    pub tenant_created: bool,
    pub admin_id: AccountId,
    pub admin_created: bool,
}

/// Why [`create_tenant`] refused.
#[derive(Debug, thiserror::Error)]
pub enum CreateTenantError {
    #[error(
        "refusing to make {email} the owner: an account with this email already exists and \
         {why}, so it may not be the owner's; nothing was created. Use the account's own \
         password in --admin-password-file (its address must be verified), or another \
         --admin-email and invite the owner from the Team page"
    )]
    UntrustedAccount { email: String, why: &'static str },
    #[error(
        "refusing to make {email} an owner of {slug:?}: the tenant already exists and this \
         account is not one of its owners (someone else may have claimed the slug); nothing \
         was changed. Choose another --slug"
    )]
    TenantTaken { email: String, slug: String },
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Creates the tenant and its owner, or finds them (idempotent on slug and
/// email; an existing account keeps its password). Refused: an existing
/// account not proven the operator's (its address unverified, or the
/// password file not holding its password, or disabled), before anything
/// is written; a slug whose tenant the account does not own (checked
/// first, and again in the tenant's own transaction).
pub async fn create_tenant(
    pool: &PgPool,
    new: &NewTenant,
) -> Result<CreatedTenant, CreateTenantError> {
    // An existing tenant is only ever the same command run again: its
    // owner is this email's account. Checked before anything is written.
    if let Some(existing) = tenants::find_by_slug(pool, &new.slug)
        .await
        .context("looking for the tenant")?
    {
        let owner = match accounts::find_by_email(pool, &(&new.admin_email).into()).await? {
            Some(account) => {
                tenants::role_of(pool, existing, account)
                    .await
                    .context("reading the admin's role")?
                    == Some(tenants::Role::Owner)
            }
            None => false,
        };
        if !owner {
            return Err(CreateTenantError::TenantTaken {
                email: new.admin_email.as_str().to_owned(),
                slug: new.slug.as_str().to_owned(),
            });
        }
    }
    let (admin_id, admin_created) = accounts::ensure_account(
        pool,
        &new.admin_email,
        &new.admin_name,
        &new.admin_password,
        ExistingPassword::Keep,
    )
    .await
    .context("creating the admin account")?;
    // `ensure_account` wrote nothing for an existing account (`Keep`), so a
    // refusal here leaves the database as it was.
    if !admin_created {
        let why = if !accounts::is_trusted(pool, admin_id)
            .await
            .context("checking the existing admin account")?
        {
            Some("its address is not verified")
        } else {
            match operator_knows_password(pool, new).await? {
                Proof::Proven => None,
                Proof::WrongPassword => Some("--admin-password-file does not hold its password"),
                Proof::Disabled => Some("it is disabled"),
            }
        };
        if let Some(why) = why {
            return Err(CreateTenantError::UntrustedAccount {
                email: new.admin_email.as_str().to_owned(),
                why,
            });
        }
    }
    // Checked again where it is decided, in the tenant's transaction: a
    // stranger may claim the slug between the first check and here.
    let (tenant_id, tenant_created) =
        match tenants::ensure_tenant_with_owner(pool, &new.slug, &new.name, admin_id).await {
            Ok(done) => done,
            Err(tenants::TenantError::SlugTaken) => {
                return Err(CreateTenantError::TenantTaken {
                    email: new.admin_email.as_str().to_owned(),
                    slug: new.slug.as_str().to_owned(),
                });
            }
            Err(error) => {
                return Err(anyhow::Error::new(error)
                    .context("creating the tenant")
                    .into());
            }
        };
    Ok(CreatedTenant {
        tenant_id,
        tenant_created,
        admin_id,
        admin_created,
    })
}

/// What the password file proves of an existing account.
enum Proof {
    Proven,
    WrongPassword,
    Disabled,
}

/// Whether `--admin-password-file` holds the existing account's password.
async fn operator_knows_password(pool: &PgPool, new: &NewTenant) -> anyhow::Result<Proof> {
    match accounts::authenticate(pool, &(&new.admin_email).into(), &new.admin_password).await {
        Ok(_) => Ok(Proof::Proven),
        Err(accounts::AccountError::InvalidCredentials) => Ok(Proof::WrongPassword),
        Err(accounts::AccountError::Disabled) => Ok(Proof::Disabled),
        Err(error) => Err(anyhow::Error::new(error).context("checking the existing admin account")),
    }
}

/// The demo tenant's public credentials (development only).
pub struct DemoCredentials {
    pub tenant_slug: &'static str,
    pub admin_email: &'static str,
    pub admin_password: &'static str,
    pub learner_email: &'static str,
    pub learner_password: &'static str,
}

pub const DEMO: DemoCredentials = DemoCredentials {
    tenant_slug: "demo",
    admin_email: "admin@demo.admitone.test",
    admin_password: "demo-admin-password",
    learner_email: "learner@demo.admitone.test",
    learner_password: "demo-learner-password",
};

/// What the demo seed made, for `make run` to print.
#[derive(Debug)]
pub struct Demo {
    pub tenant: TenantId,
    pub course_slug: String,
    /// A fresh code for the demo learner, unless they already hold the
    /// course (plain codes exist only when issued).
    pub learner_code: Option<String>,
}

/// The demo course's slug.
pub const DEMO_COURSE: &str = "demo-course";

const DEMO_PAGE: &str = "<h1>Welcome</h1>\n<p>You are reading a resource that only learners \
    holding a bound code can open. Sign in on another device: you will not need the code again.</p>\n";

/// Seeds the demo tenant, its admin, a learner, and an active course with
/// one page; resets the passwords to the printed ones so the credentials
/// always work, and issues the learner a fresh code while they hold none.
pub async fn seed_demo(
    pool: &PgPool,
    storage: &Storage,
    keyring: &Keyring,
) -> anyhow::Result<Demo> {
    let tenant = seed_demo_accounts(pool).await?;
    let admin = accounts::find_by_email(pool, &EmailToFind::parse(DEMO.admin_email)?)
        .await?
        .context("the demo admin was just seeded")?;
    let share = match shares::find_by_slug(pool, DEMO_COURSE)
        .await
        .context("finding the demo course")?
    {
        Some(share) => share,
        None => {
            let new = NewShare::parse(ShareInput {
                title: "Getting started with AdmitOne".into(),
                slug: Some(DEMO_COURSE.into()),
                description: Some(
                    "A one-page demo course. Enter the code `make run` printed, then open the page.".into(),
                ),
                status: Some("active".into()),
                per_learner_limit: None,
                quota: None,
                access_days: None,
                valid_from: None,
                valid_until: None,
            })?;
            let share = shares::create_share(pool, tenant, admin, new)
                .await
                .context("creating the demo course")?;
            let resource = uuid::Uuid::new_v4();
            let key = Storage::key_for(tenant, share.id, resource);
            let body = futures::stream::iter([Ok::<_, std::io::Error>(bytes::Bytes::from_static(
                DEMO_PAGE.as_bytes(),
            ))]);
            let size = storage
                .put(&key, body, u64::MAX)
                .await
                .map_err(|e| anyhow::anyhow!("storing the demo page: {e}"))?;
            resources::add_resource(
                pool,
                tenant,
                admin,
                share.id,
                resource,
                "Welcome",
                "text/html; charset=utf-8",
                i64::try_from(size)?,
                &key,
                // The demo's one small page: no tenant is at its quota yet.
                i64::MAX,
            )
            .await
            .context("adding the demo page")?;
            share
        }
    };
    let learner = accounts::find_by_email(pool, &EmailToFind::parse(DEMO.learner_email)?)
        .await?
        .context("the demo learner was just seeded")?;
    let learner_code = if settlement::binding_of(pool, &share, learner)
        .await?
        .is_some()
    {
        None
    } else {
        let batch = batches::issue_codes(
            pool,
            keyring,
            tenant,
            admin,
            &batches::BatchRequest {
                share: share.id,
                count: 1,
                label: "demo",
                expires_at: None,
                idempotency_key: None,
                progress: None,
                mailable: false,
            },
        )
        .await
        .context("issuing the demo code")?;
        batch.codes.first().map(|(_, code)| code.display())
    };
    Ok(Demo {
        tenant,
        course_slug: share.slug,
        learner_code,
    })
}

/// The demo tenant, its admin and its learner.
async fn seed_demo_accounts(pool: &PgPool) -> anyhow::Result<TenantId> {
    let parse_password = |p: &str| Password::parse(SecretString::from(p.to_owned()));
    let (admin, _) = accounts::ensure_account(
        pool,
        &Email::parse(DEMO.admin_email)?,
        &DisplayName::parse("Demo Admin")?,
        &parse_password(DEMO.admin_password)?,
        ExistingPassword::Reset,
    )
    .await
    .context("seeding the demo admin")?;
    accounts::ensure_account(
        pool,
        &Email::parse(DEMO.learner_email)?,
        &DisplayName::parse("Demo Learner")?,
        &parse_password(DEMO.learner_password)?,
        ExistingPassword::Reset,
    )
    .await
    .context("seeding the demo learner")?;
    let (tenant, _) = tenants::ensure_tenant_with_owner(
        pool,
        &TenantSlug::parse(DEMO.tenant_slug)?,
        &TenantName::parse("Demo Academy")?,
        admin,
    )
    .await
    .context("seeding the demo tenant")?;
    Ok(tenant)
}
