//! The words of the typed read models (`server/model`) are the words the
//! database allows: a migration that adds a status to a `CHECK` without a
//! variant (or a variant without the migration) fails here, not as a 500
//! on the first share that uses it.

use model::{CodeState, ResourceKind, ShareStatus};
use sqlx::PgPool;

/// The quoted words of the `CHECK` constraint on `table.column`.
async fn allowed_words(pool: &PgPool, table: &str, column: &str) -> Vec<String> {
    let definitions: Vec<String> = sqlx::query_scalar(
        "SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
         WHERE c.conrelid = $1::regclass AND c.contype = 'c'",
    )
    .bind(table)
    .fetch_all(pool)
    .await
    .expect("constraints");
    let definition = definitions
        .into_iter()
        .find(|d| d.contains(&format!("({column} = ")) || d.contains(&format!("{column} IN")))
        .unwrap_or_else(|| panic!("no CHECK on {table}.{column}"));
    let mut words: Vec<String> = definition
        .split('\'')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect();
    words.sort();
    words
}

fn sorted(words: impl IntoIterator<Item = &'static str>) -> Vec<String> {
    let mut words: Vec<String> = words.into_iter().map(str::to_owned).collect();
    words.sort();
    words
}

#[sqlx::test(migrations = "../migrations")]
async fn every_status_and_kind_the_database_allows_is_a_variant_and_back(pool: PgPool) {
    assert_eq!(
        allowed_words(&pool, "shares", "status").await,
        sorted(ShareStatus::ALL.iter().map(|s| s.as_str()))
    );
    assert_eq!(
        allowed_words(&pool, "resources", "kind").await,
        sorted(ResourceKind::ALL.iter().map(|k| k.as_str()))
    );
}

/// The sqlx spelling (what queries decode and bind) is the same word as
/// `as_str`, for every variant.
#[sqlx::test(migrations = "../migrations")]
async fn each_variant_goes_through_postgres_as_its_word(pool: PgPool) {
    for &status in ShareStatus::ALL {
        let (word, back): (String, ShareStatus) = sqlx::query_as("SELECT $1::text, $1::text")
            .bind(status)
            .fetch_one(&pool)
            .await
            .expect("round trip");
        assert_eq!((word.as_str(), back), (status.as_str(), status));
    }
    for &kind in ResourceKind::ALL {
        let back: ResourceKind = sqlx::query_scalar("SELECT $1::text")
            .bind(kind.as_str())
            .fetch_one(&pool)
            .await
            .expect("decode");
        assert_eq!(back, kind);
    }
    for &state in CodeState::ALL {
        let back: CodeState = sqlx::query_scalar("SELECT $1::text")
            .bind(state.as_str())
            .fetch_one(&pool)
            .await
            .expect("decode");
        assert_eq!(back, state);
    }
    let unknown = sqlx::query_scalar::<_, ShareStatus>("SELECT 'live'::text")
        .fetch_one(&pool)
        .await;
    assert!(
        unknown.is_err(),
        "a word that is no variant does not decode"
    );
}
