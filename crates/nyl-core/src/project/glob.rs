//! Globs over `/`-separated paths relative to the project root, as DeploymentTargets'
//! `spec.apps` write them, compiled by `globset`: `*` matches any characters within one segment,
//! `?` one character, a `**` segment zero or more whole segments, `{a,b}` either alternative and
//! `[...]` one character of a class.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled glob.
#[derive(Clone, Debug)]
pub struct Glob {
    /// As written, for messages.
    pub pattern: String,
    matcher: GlobSet,
}

impl Glob {
    /// Compiles `pattern`; the error says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        // `./apps/web` and `apps/web/` name the same paths as `apps/web`.
        let normalized: Vec<&str> = pattern
            .trim_end_matches('/')
            .split('/')
            .filter(|s| *s != ".")
            .collect();
        let normalized = normalized.join("/");
        let compile = |pattern: &str| {
            GlobBuilder::new(pattern)
                // `*` and `?` never cross a `/`.
                .literal_separator(true)
                .build()
                .map_err(|e| e.kind().to_string())
        };
        let mut set = GlobSetBuilder::new();
        set.add(compile(&normalized)?);
        // A trailing `**` matches zero segments too, so `apps/**` matches `apps` itself.
        if let Some(parent) = normalized.strip_suffix("/**") {
            set.add(compile(parent)?);
        }
        let matcher = set.build().map_err(|e| e.kind().to_string())?;
        Ok(Glob {
            pattern: pattern.to_string(),
            matcher,
        })
    }

    /// Whether `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        self.matcher.is_match(path.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::Glob;

    fn matches(pattern: &str, path: &str) -> bool {
        Glob::new(pattern).unwrap().matches(path)
    }

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
        assert!(!matches("apps/?", "apps/a/b"), "? stays in its segment");
        assert!(!matches("apps", "apps/web"));
        assert!(matches("**", "anything/at/all"));
        assert!(matches("apps/**", "apps"), "a trailing ** may be empty too");
        assert!(matches("apps/**", "apps/a/b"));
    }

    #[test]
    fn braces_choose_between_alternatives() {
        assert!(matches("apps/{db,web}.yaml", "apps/db.yaml"));
        assert!(matches("apps/{db,web}.yaml", "apps/web.yaml"));
        assert!(!matches("apps/{db,web}.yaml", "apps/cache.yaml"));
        assert!(matches("{apps,infra}/*", "infra/dns"));
    }

    #[test]
    fn classes_match_one_character() {
        assert!(matches("apps/db[0-9].yaml", "apps/db7.yaml"));
        assert!(!matches("apps/db[0-9].yaml", "apps/dbx.yaml"));
        assert!(matches("apps/db[!0-9].yaml", "apps/dbx.yaml"));
        assert!(!matches("apps[/]db", "apps/db"), "a class never matches /");
    }

    #[test]
    fn an_invalid_glob_is_an_error_that_says_why() {
        let err = Glob::new("apps/{db,web.yaml").unwrap_err();
        assert!(err.contains("unclosed alternate group"), "{err}");
        let err = Glob::new("apps/db[.yaml").unwrap_err();
        assert!(err.contains("unclosed character class"), "{err}");
    }
}
