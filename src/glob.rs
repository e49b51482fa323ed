//! Globs over `/`-separated paths relative to the project root, as DeploymentTargets'
//! `spec.apps` write them: `*` matches any characters within one segment, `?` one character, and
//! a `**` segment zero or more whole segments.

/// Whether `path` matches `pattern`.
pub fn matches(pattern: &str, path: &str) -> bool {
    let pattern: Vec<&str> = pattern
        .trim_end_matches('/')
        .split('/')
        .filter(|s| *s != ".")
        .collect();
    let path: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    segments(&pattern, &path)
}

fn segments(pattern: &[&str], path: &[&str]) -> bool {
    match pattern.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|skip| segments(rest, &path[skip..])),
        Some((first, rest)) => path.split_first().is_some_and(|(segment, path_rest)| {
            segment_matches(first.as_bytes(), segment.as_bytes()) && segments(rest, path_rest)
        }),
    }
}

fn segment_matches(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|skip| segment_matches(rest, &text[skip..])),
        Some((b'?', rest)) => !text.is_empty() && segment_matches(rest, &text[1..]),
        Some((c, rest)) => text.first() == Some(c) && segment_matches(rest, &text[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn globs_match_like_shell_globs_with_double_star() {
        assert!(matches("apps/db.yaml", "apps/db.yaml"));
        assert!(matches("apps/*.yaml", "apps/db.yaml"));
        assert!(
            !matches("apps/*.yaml", "apps/sub/db.yaml"),
            "* stays in its segment"
        );
        assert!(matches("apps/**/*.yaml", "apps/db.yaml"), "** may be empty");
        assert!(matches("apps/**/*.yaml", "apps/a/b/db.yaml"));
        assert!(matches("apps/*", "apps/web"));
        assert!(matches("apps/web/", "apps/web"));
        assert!(matches("./apps/web", "apps/web"));
        assert!(matches("apps/db?.yaml", "apps/db1.yaml"));
        assert!(!matches("apps/db?.yaml", "apps/db.yaml"));
        assert!(!matches("apps", "apps/web"));
        assert!(matches("**", "anything/at/all"));
    }
}
