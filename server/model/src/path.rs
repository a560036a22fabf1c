//! Where a person may be sent back to after signing in or registering: a
//! path on this site, never another site. Pages (in the browser and on
//! the server) and the registration that stores the path share this rule.

/// Whether `next` is a path on this site: it starts with one `/` (`//host`
/// is another site to a browser, and so is `/\host`), has no control
/// characters, and is at most 2,048 bytes.
pub fn is_local_path(next: &str) -> bool {
    next.starts_with('/')
        && !next.starts_with("//")
        && !next.contains('\\')
        && !next.chars().any(char::is_control)
        && next.len() <= 2048
}

#[cfg(test)]
mod tests {
    use super::is_local_path;

    #[test]
    fn only_paths_on_this_site() {
        for good in ["/", "/s/course?x=1", "/invitation?token=abc"] {
            assert!(is_local_path(good), "{good:?}");
        }
        let long = format!("/{}", "a".repeat(2048));
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "javascript:x",
            "",
            "/a\nb",
            long.as_str(),
        ] {
            assert!(!is_local_path(bad), "{bad:?}");
        }
        assert!(is_local_path(&long[..2048]));
    }
}
