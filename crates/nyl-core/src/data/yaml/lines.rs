//! Where YAML's lines end: at `\n`, `\r\n`, or a `\r` alone (YAML 1.2's line breaks, as the Go
//! YAML readers take them).

/// The lines of `text` with their line breaks: `\n`, `\r\n`, or a `\r` alone, as YAML reads them.
/// `memchr` finds the breaks: splitting and scanning Helm's output is most of a cold render.
pub(super) fn lines_inclusive(text: &str) -> impl Iterator<Item = &str> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= text.len() {
            return None;
        }
        let end = line_end(text.as_bytes(), start);
        let line = &text[start..end];
        start = end;
        Some(line)
    })
}

/// Where the line that starts at `start` ends, its line break included.
pub(super) fn line_end(bytes: &[u8], start: usize) -> usize {
    match memchr::memchr2(b'\n', b'\r', &bytes[start..]) {
        Some(i) if bytes[start + i] == b'\r' && bytes.get(start + i + 1) == Some(&b'\n') => {
            start + i + 2
        }
        Some(i) => start + i + 1,
        None => bytes.len(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_are_split_as_split_inclusive_splits_them() {
        for text in ["", "a", "a\n", "a\nb", "\n\nb\n", "é\r\nü\n\n"] {
            assert_eq!(
                super::lines_inclusive(text).collect::<Vec<_>>(),
                text.split_inclusive('\n').collect::<Vec<_>>(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn a_carriage_return_alone_ends_a_line() {
        assert_eq!(
            super::lines_inclusive("a\rb\r\nc\r").collect::<Vec<_>>(),
            ["a\r", "b\r\n", "c\r"]
        );
    }
}
