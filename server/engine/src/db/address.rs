//! The database URL, read strictly.
//!
//! Why strictly: sqlx 0.8 reads a PostgreSQL URL with one host and a short
//! list of parameters, and *ignores* every other parameter with only a log
//! line. So `?target_session_attrs=read-write` or a libpq host list
//! (`host=a,b`) look like a highly available setup and are not: the pool
//! would connect to one node, whichever role it has. A URL whose meaning
//! the driver would not honour is refused at start-up, naming the part, so
//! that nobody runs believing in a failover the client cannot do
//! (`docs/operations/configuration.md`, "The database URL").

use sqlx::postgres::PgConnectOptions;

/// Why a database URL was refused. The URL itself is never echoed: it may
/// carry a password.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DatabaseUrlError {
    #[error("is not a URL ({0})")]
    NotAUrl(String),
    #[error("must start with postgres:// or postgresql://")]
    Scheme,
    /// The parameter's name, when it looks like one (a password with an
    /// unencoded `?` would otherwise be echoed as a "parameter").
    #[error(
        "parameter {} is not understood by the PostgreSQL driver, which would ignore it; \
         remove it (understood: {UNDERSTOOD})",
        .0.as_deref().map_or_else(|| "(not shown: not a parameter name)".to_owned(), |n| format!("`{n}`"))
    )]
    Ignored(Option<String>),
    /// How many hosts (never their text: a password with an unencoded `,`
    /// would be part of it).
    #[error(
        "names {0} hosts; the driver connects to one: \
         give the one address that reaches the primary, and the others in \
         database.failover_hosts (docs/operations/configuration.md)"
    )]
    SeveralHosts(usize),
    #[error("{0}")]
    Invalid(String),
}

/// The query parameters sqlx 0.8.6 acts on (`PgConnectOptions::parse_from_url`),
/// in the spellings it accepts; `options[NAME]` is understood as well.
const PARAMETERS: &[&str] = &[
    "sslmode",
    "ssl-mode",
    "sslrootcert",
    "ssl-root-cert",
    "ssl-ca",
    "sslcert",
    "ssl-cert",
    "sslkey",
    "ssl-key",
    "statement-cache-capacity",
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "application_name",
    "options",
];

const UNDERSTOOD: &str = "sslmode, sslrootcert, sslcert, sslkey, statement-cache-capacity, host, \
                          hostaddr, port, dbname, user, password, application_name, options, \
                          options[NAME]";

/// Parses `url` into connect options, refusing what the driver would
/// silently ignore: an unknown parameter, a malformed `options[…]`, and a
/// host list.
pub fn parse(url: &str) -> Result<PgConnectOptions, DatabaseUrlError> {
    // `postgres://a:5432,b:5432/db` does not even parse as a URL (a port of
    // "5432,b"): name the host list rather than a syntax error.
    let authority = url
        .split_once("://")
        .map_or("", |(_, rest)| rest.split(['/', '?']).next().unwrap_or(""));
    let hosts = authority
        .rsplit_once('@')
        .map_or(authority, |(_, hosts)| hosts);
    if hosts.contains(',') {
        return Err(DatabaseUrlError::SeveralHosts(hosts.split(',').count()));
    }
    let parsed = url::Url::parse(url).map_err(|e| DatabaseUrlError::NotAUrl(e.to_string()))?;
    if !matches!(parsed.scheme(), "postgres" | "postgresql") {
        return Err(DatabaseUrlError::Scheme);
    }
    if let Some(host) = parsed.host_str().filter(|host| host.contains(',')) {
        return Err(DatabaseUrlError::SeveralHosts(host.split(',').count()));
    }
    for (key, value) in parsed.query_pairs() {
        let known = PARAMETERS.contains(&key.as_ref())
            || key
                .strip_prefix("options[")
                .and_then(|rest| rest.strip_suffix(']'))
                .is_some_and(|name| !name.is_empty());
        if !known {
            let named = key.len() <= 64
                && key
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_.-[]".contains(c));
            return Err(DatabaseUrlError::Ignored(named.then(|| key.into_owned())));
        }
        if matches!(key.as_ref(), "host" | "hostaddr") && value.contains(',') {
            return Err(DatabaseUrlError::SeveralHosts(value.split(',').count()));
        }
    }
    url.parse()
        .map_err(|e: sqlx::Error| DatabaseUrlError::Invalid(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::{DatabaseUrlError, parse};

    #[test]
    fn the_urls_we_run_with_parse() {
        for url in [
            "postgres://postgres@127.0.0.1:5432/admitone",
            "postgresql://app:s3cret@db.internal/admitone?sslmode=verify-full&sslrootcert=/etc/ca.pem",
            "postgres:///admitone?host=/var/run/postgresql",
            "postgres://app@db/admitone?application_name=admitone&options[search_path]=public",
            "postgres://app@db/admitone?statement-cache-capacity=200&options=-c%20jit%3Doff",
        ] {
            parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }

    #[test]
    fn a_parameter_the_driver_ignores_is_refused_by_name() {
        for (url, name) in [
            (
                "postgres://app@db/admitone?target_session_attrs=read-write",
                "target_session_attrs",
            ),
            (
                "postgres://app@db/admitone?sslmode=require&connect_timeout=5",
                "connect_timeout",
            ),
            (
                "postgres://app@db/admitone?load_balance_hosts=random",
                "load_balance_hosts",
            ),
            ("postgres://app@db/admitone?options[=x", "options["),
            ("postgres://app@db/admitone?options[]=x", "options[]"),
            ("postgres://app@db/admitone?sslMode=require", "sslMode"),
        ] {
            assert_eq!(
                parse(url).expect_err(url),
                DatabaseUrlError::Ignored(Some(name.to_owned())),
                "{url}"
            );
        }
    }

    #[test]
    fn a_host_list_is_refused() {
        for url in [
            "postgres://app@db1,db2/admitone",
            "postgres://app:pw@db1:5432,db2:5432/admitone",
            "postgres:///admitone?host=db1,db2",
            "postgres:///admitone?hostaddr=10.0.0.1,10.0.0.2",
        ] {
            assert!(
                matches!(parse(url), Err(DatabaseUrlError::SeveralHosts(_))),
                "{url}: {:?}",
                parse(url)
            );
        }
    }

    #[test]
    fn other_schemes_and_bad_values_are_refused_without_echoing_the_password() {
        assert_eq!(
            parse("mysql://app:pw@db/admitone").expect_err("scheme"),
            DatabaseUrlError::Scheme
        );
        // A password sqlx would take, but whose unencoded `?` or `,` (with
        // a `/` after it) ends the authority early: refused, and no piece
        // of the password shown.
        for (url, secret) in [
            (
                "postgres://app:hunter2@db/admitone?sslmode=sometimes",
                "hunter2",
            ),
            ("postgres://app:se,cr/et@db/admitone", "se,cr"),
            ("postgres://app:1234?hunter2@db/admitone", "hunter2"),
        ] {
            let error = parse(url).expect_err(url).to_string();
            assert!(!error.contains(secret), "{url}: {error}");
            assert!(!error.contains("app:"), "{url}: {error}");
        }
        assert!(matches!(
            parse("not a url"),
            Err(DatabaseUrlError::NotAUrl(_))
        ));
    }
}
