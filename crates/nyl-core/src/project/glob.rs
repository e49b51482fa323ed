//! Globs over `/`-separated paths relative to the project root, as DeploymentTargets'
//! `spec.apps` write them, with the meaning `globset` gives them: `*` matches any characters
//! within one segment, `?` one character, a `**` segment zero or more whole segments, `{a,b}`
//! either alternative and `[...]` one character of a class.
//!
//! Most globs are segments of literal text, `*` and `?`, and whole `**` segments (`apps/*`,
//! `clusters/**`): those are matched here segment by segment, as `globset` would match them.
//! `globset` compiles every glob into a regular expression (about 300,000 instructions, 8% of
//! of a warm one-app render), which only the others need.

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// A compiled glob.
#[derive(Clone, Debug)]
pub struct Glob {
    /// As written, for messages.
    pub pattern: String,
    matcher: Matcher,
}

#[derive(Clone, Debug)]
enum Matcher {
    /// The normalized glob's segments, for a glob without braces, classes or escapes whose `**`
    /// segments are never next to each other.
    Segments(Vec<Segment>),
    Set(GlobSet),
}

#[derive(Clone, Debug, PartialEq)]
enum Segment {
    /// `**`: zero or more whole segments.
    AnyDepth,
    /// Literal bytes, `*` (any bytes but `/`) and `?` (one byte but `/`), as `globset`'s
    /// expressions match them (bytes, not characters).
    Within(Vec<u8>),
}

impl Glob {
    /// Compiles `pattern`; the error says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, String> {
        let normalized = normalize(pattern);
        let matcher = match segments(&normalized) {
            Some(segments) => Matcher::Segments(segments),
            None => Matcher::Set(compile(&normalized.join("/"))?),
        };
        Ok(Glob {
            pattern: pattern.to_string(),
            matcher,
        })
    }

    /// Whether `path` matches.
    pub fn matches(&self, path: &str) -> bool {
        let path = path.trim_end_matches('/');
        match &self.matcher {
            Matcher::Segments(segments) => matches_segments(segments, path),
            Matcher::Set(set) => set.is_match(path),
        }
    }

    /// Whether the glob can match `dir` or a path below it; `true` when only `globset` could
    /// tell. What lets a directory that no glob reaches go without a walk of the repository.
    pub fn may_match_within(&self, dir: &str) -> bool {
        match &self.matcher {
            Matcher::Segments(segments) => ends_within(segments, dir.trim_end_matches('/')),
            Matcher::Set(_) => true,
        }
    }
}

/// The glob's segments: `./apps/web` and `apps/web/` name the same paths as `apps/web`.
fn normalize(pattern: &str) -> Vec<&str> {
    pattern
        .trim_end_matches('/')
        .split('/')
        .filter(|s| *s != ".")
        .collect()
}

/// The glob (normalized, `/`-separated) as `globset` compiles it.
fn compile(normalized: &str) -> Result<GlobSet, String> {
    let compile = |pattern: &str| {
        GlobBuilder::new(pattern)
            // `*` and `?` never cross a `/`.
            .literal_separator(true)
            .build()
            .map_err(|e| e.kind().to_string())
    };
    let mut set = GlobSetBuilder::new();
    set.add(compile(normalized)?);
    // A trailing `**` matches zero segments too, so `apps/**` matches `apps` itself.
    if let Some(parent) = normalized.strip_suffix("/**") {
        set.add(compile(parent)?);
    }
    set.build().map_err(|e| e.kind().to_string())
}

/// The segments of a glob that [`matches_segments`] can match, or `None` for one that needs
/// `globset`: braces, classes, escapes, an empty segment (`/apps`, `a//b`, `.`), or two `**` in a
/// row (`globset` reads these in ways of its own: `a/**/**` does not match `a`, `**//**` does).
fn segments(normalized: &[&str]) -> Option<Vec<Segment>> {
    if normalized.is_empty()
        || normalized
            .iter()
            .any(|s| s.is_empty() || s.contains(['[', ']', '{', '}', '\\']))
        || normalized.windows(2).any(|w| w == ["**", "**"])
    {
        return None;
    }
    Some(
        normalized
            .iter()
            .map(|s| match *s {
                "**" => Segment::AnyDepth,
                s => Segment::Within(s.as_bytes().to_vec()),
            })
            .collect(),
    )
}

/// Whether `path` (without a trailing `/`) matches the segments.
fn matches_segments(pattern: &[Segment], path: &str) -> bool {
    let path: Vec<&[u8]> = path.split('/').map(str::as_bytes).collect();
    let mut at = starts(path.len());
    for segment in pattern {
        at = step(segment, &path, &at);
    }
    at[path.len()]
}

/// Whether some first segments of the pattern match all of `dir` (the rest can then match a
/// path below it: every segment matches some name) or `dir` is the project root.
fn ends_within(pattern: &[Segment], dir: &str) -> bool {
    if dir.is_empty() {
        return true;
    }
    let dir: Vec<&[u8]> = dir.split('/').map(str::as_bytes).collect();
    let mut at = starts(dir.len());
    for segment in pattern {
        if at[dir.len()] {
            return true;
        }
        at = step(segment, &dir, &at);
    }
    at[dir.len()]
}

/// Where in a path of `len` segments no pattern segment has been matched yet: at its start.
fn starts(len: usize) -> Vec<bool> {
    let mut at = vec![false; len + 1];
    at[0] = true;
    at
}

/// The positions in `path` that the pattern's segments so far, then `segment`, can end at,
/// from those (`at`) that the segments so far can end at.
fn step(segment: &Segment, path: &[&[u8]], at: &[bool]) -> Vec<bool> {
    let mut next = vec![false; path.len() + 1];
    for i in (0..=path.len()).filter(|&i| at[i]) {
        match segment {
            Segment::AnyDepth => {
                next[i..].fill(true);
            }
            Segment::Within(p) => {
                if path.get(i).is_some_and(|s| within(p, s)) {
                    next[i + 1] = true;
                }
            }
        }
    }
    next
}

/// Whether one segment's text matches a segment pattern of literal bytes, `*` and `?`: the
/// usual wildcard match, going back only to the last `*`.
fn within(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // The last `*` seen, and where in `text` it last stopped.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::{compile, normalize, Glob, Matcher};

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
    fn segments_match_what_globset_matches() {
        // Every glob of up to three of these segments, with and without a trailing `/`, against
        // every path of up to three of these segments.
        let parts = ["a", "ab", "*", "?", "**", "a*", "*b?", "."];
        let names = ["a", "b", "ab", "", "a\nb", "é"];
        // Every `/`-joined sequence of `depth` of `items`.
        fn joined(items: &[&str], depth: usize) -> Vec<String> {
            (0..depth)
                .fold(vec![Vec::<&str>::new()], |seqs, _| {
                    seqs.iter()
                        .flat_map(|s| items.iter().map(move |i| [s.as_slice(), &[*i]].concat()))
                        .collect()
                })
                .iter()
                .map(|s| s.join("/"))
                .collect()
        }
        let mut patterns = Vec::new();
        let mut paths = vec![String::new()];
        for depth in 1..=3 {
            for p in joined(&parts, depth) {
                patterns.extend([format!("{p}/"), p]);
            }
            paths.extend(joined(&names, depth));
        }
        let mut compared = 0;
        for pattern in &patterns {
            let glob = Glob::new(pattern).unwrap();
            if !matches!(glob.matcher, Matcher::Segments(_)) {
                continue;
            }
            let set = Glob {
                pattern: pattern.clone(),
                matcher: Matcher::Set(compile(&normalize(pattern).join("/")).unwrap()),
            };
            for path in &paths {
                assert_eq!(
                    glob.matches(path),
                    set.matches(path),
                    "glob {pattern:?}, path {path:?}"
                );
                compared += 1;
            }
        }
        assert!(compared > 100_000, "{compared}");
    }

    #[test]
    fn a_glob_may_match_within_a_directory_exactly_when_it_matches_the_directory_or_below() {
        let parts = ["a", "ab", "*", "?", "**", "a*", "*b?"];
        let names = ["a", "ab", "abc"];
        let joined = |items: &[&str], depth: usize| -> Vec<String> {
            let mut seqs = vec![String::new()];
            for _ in 0..depth {
                seqs = seqs
                    .iter()
                    .flat_map(|s| items.iter().map(move |i| format!("{s}/{i}")))
                    .collect();
            }
            seqs.into_iter().map(|s| s[1..].to_string()).collect()
        };
        let upto = |items: &[&str]| (1..=3).flat_map(|d| joined(items, d)).collect::<Vec<_>>();
        let (patterns, dirs) = (upto(&parts), upto(&names));
        for pattern in &patterns {
            let glob = Glob::new(pattern).unwrap();
            assert!(glob.may_match_within(""), "the root holds everything");
            if !matches!(glob.matcher, Matcher::Segments(_)) {
                // Only globset could tell: taken to reach anywhere.
                assert!(dirs.iter().all(|dir| glob.may_match_within(dir)));
                continue;
            }
            for dir in &dirs {
                // A pattern of three segments matches at most three below the directory.
                let below = std::iter::once(dir.clone())
                    .chain(dirs.iter().map(|rest| format!("{dir}/{rest}")))
                    .any(|path| glob.matches(&path));
                assert_eq!(
                    glob.may_match_within(dir),
                    below,
                    "glob {pattern:?}, dir {dir:?}"
                );
            }
        }
        assert!(Glob::new("x/{a,b}").unwrap().may_match_within("y"));
    }

    #[test]
    fn globs_beyond_segments_go_to_globset() {
        for pattern in [
            "apps/{a,b}",
            "apps/[ab]",
            "apps/\\*",
            "a/**/**",
            "/apps",
            ".",
        ] {
            let glob = Glob::new(pattern).unwrap();
            assert!(matches!(glob.matcher, Matcher::Set(_)), "{pattern}");
        }
        assert!(!matches("a/**/**", "a"), "as globset reads it");
        assert!(matches("a/**/**", "a/b"));
    }

    #[test]
    fn an_invalid_glob_is_an_error_that_says_why() {
        let err = Glob::new("apps/{db,web.yaml").unwrap_err();
        assert!(err.contains("unclosed alternate group"), "{err}");
        let err = Glob::new("apps/db[.yaml").unwrap_err();
        assert!(err.contains("unclosed character class"), "{err}");
    }
}
