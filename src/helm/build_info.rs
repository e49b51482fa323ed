//! Helm's version read from the binary itself, where Go recorded it, so that a run with no
//! remembered `helm version` answer starts no extra process: on one core that probe costs as much
//! as a render.
//!
//! Go (1.18 and newer) writes the build's module information into an ELF section,
//! `.go.buildinfo`; Go 1.24 and newer record there the main module's version from the release
//! tag it was built at (`mod helm.sh/helm/v4 v4.3.1`), which is what Helm's release builds print
//! as `helm version`. Anything else (not a 64-bit little-endian ELF file, no such section,
//! `(devel)`, a pseudo-version, a `+dirty` build, another module) is no answer, and `helm
//! version` is asked as before.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// The section's largest plausible size: it holds the module list of one program.
const MAX_SECTION: u64 = 1 << 20;

/// The version of Helm a binary was released as, when its build information says so exactly.
pub fn helm_version(path: &Path) -> Option<String> {
    let file = File::open(path).ok()?;
    let section = buildinfo_section(&file)?;
    release_version(&module_info(&section)?)
}

/// The bytes of the `.go.buildinfo` section.
fn buildinfo_section(file: &File) -> Option<Vec<u8>> {
    let read = |offset: u64, len: u64| -> Option<Vec<u8>> {
        let mut buf = vec![0; usize::try_from(len).ok()?];
        file.read_exact_at(&mut buf, offset).ok()?;
        Some(buf)
    };
    let header = read(0, 64)?;
    // ELF, 64-bit, little-endian.
    if header[..4] != *b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let shoff = u64_at(&header, 0x28)?;
    let (shentsize, shnum, shstrndx) = (
        u64::from(u16_at(&header, 0x3a)?),
        u64::from(u16_at(&header, 0x3c)?),
        u64::from(u16_at(&header, 0x3e)?),
    );
    if shentsize < 64 || shnum == 0 || shstrndx >= shnum {
        return None;
    }
    let sections = read(shoff, shentsize.checked_mul(shnum)?)?;
    let section = |i: u64| -> Option<(u32, u64, u64)> {
        let at = usize::try_from(i * shentsize).ok()?;
        let name = u32::from_le_bytes(sections.get(at..at + 4)?.try_into().ok()?);
        Some((
            name,
            u64_at(&sections, at + 0x18)?,
            u64_at(&sections, at + 0x20)?,
        ))
    };
    let (_, names_at, names_len) = section(shstrndx)?;
    let names = read(names_at, names_len.min(MAX_SECTION))?;
    (0..shnum).find_map(|i| {
        let (name, offset, size) = section(i)?;
        let name = names.get(name as usize..)?;
        let end = name.iter().position(|&b| b == 0)?;
        (&name[..end] == b".go.buildinfo" && size <= MAX_SECTION)
            .then(|| read(offset, size))
            .flatten()
    })
}

/// The module information text of a `.go.buildinfo` section written with inline strings (Go
/// 1.18 and newer): after a 32-byte header, the Go version and the module information, each
/// prefixed by its length as a varint; the latter framed by 16-byte sentinels.
fn module_info(section: &[u8]) -> Option<String> {
    const MAGIC: &[u8] = b"\xff Go buildinf:";
    const INLINE_STRINGS: u8 = 2;
    if !section.starts_with(MAGIC) || section.get(15)? & INLINE_STRINGS == 0 {
        return None;
    }
    let rest = section.get(32..)?;
    let (_go_version, rest) = varint_string(rest)?;
    let (info, _) = varint_string(rest)?;
    let info = info.get(16..info.len().checked_sub(16)?)?;
    String::from_utf8(info.to_vec()).ok()
}

/// A varint-length-prefixed byte string, and what follows it.
fn varint_string(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (mut len, mut shift) = (0u64, 0);
    for (i, &b) in bytes.iter().enumerate().take(10) {
        len |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            let start = i + 1;
            let end = start.checked_add(usize::try_from(len).ok()?)?;
            return Some((bytes.get(start..end)?, &bytes[end..]));
        }
        shift += 7;
    }
    None
}

/// The version on the main module's line when that module is Helm's and the version a release
/// tag, `vMAJOR.MINOR.PATCH` exactly.
fn release_version(info: &str) -> Option<String> {
    let line = info.lines().find_map(|l| l.strip_prefix("mod\t"))?;
    let mut fields = line.split('\t');
    let (module, version) = (fields.next()?, fields.next()?);
    let helm = module
        .strip_prefix("helm.sh/helm/v")
        .is_some_and(|major| major.chars().all(|c| c.is_ascii_digit()));
    let numbers: Vec<&str> = version.strip_prefix('v')?.split('.').collect();
    let exact = numbers.len() == 3
        && numbers
            .iter()
            .all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
    (helm && exact).then(|| version.to_string())
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

fn u16_at(bytes: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(lines: &str) -> String {
        format!("{0}{lines}{0}", "0123456789abcdef")
    }

    fn section(info: &str) -> Vec<u8> {
        let mut s = b"\xff Go buildinf:\x08\x02".to_vec();
        s.resize(32, 0);
        for text in ["go1.25.0", info] {
            let mut len = text.len();
            while len >= 0x80 {
                s.push((len as u8 & 0x7f) | 0x80);
                len >>= 7;
            }
            s.push(len as u8);
            s.extend_from_slice(text.as_bytes());
        }
        s
    }

    #[test]
    fn only_a_release_tag_of_helm_is_an_answer() {
        let version = |lines: &str| release_version(&module_info(&section(&info(lines)))?);
        let helm = "path\thelm.sh/helm/v4/cmd/helm\nmod\thelm.sh/helm/v4\t";
        // Long enough that its length takes two varint bytes.
        let deps = "dep\texample.com/x\tv1.0.0\th1:abc=\n".repeat(20);
        assert_eq!(
            version(&format!("{helm}v4.3.1\t\n{deps}")),
            Some("v4.3.1".into())
        );
        assert_eq!(
            version("mod\thelm.sh/helm/v3\tv3.19.0\t\n"),
            Some("v3.19.0".into())
        );
        for other in [
            format!("{helm}(devel)\t\n"),
            format!("{helm}v4.3.1+dirty\t\n"),
            format!("{helm}v4.3.2-0.20260101000000-abcdef123456\t\n"),
            "mod\texample.com/not-helm\tv4.3.1\t\n".to_string(),
            "path\thelm.sh/helm/v4/cmd/helm\n".to_string(),
        ] {
            assert_eq!(version(&other), None, "{other}");
        }
    }

    #[test]
    fn a_section_in_another_layout_is_no_answer() {
        let good = section(&info("mod\thelm.sh/helm/v4\tv4.3.1\t\n"));
        let mut pointers = good.clone();
        pointers[15] = 0; // Go before 1.18: strings behind pointers.
        assert_eq!(module_info(&pointers), None);
        assert_eq!(module_info(&good[..good.len() - 20]), None);
        assert_eq!(module_info(b"not go"), None);
    }

    #[test]
    fn the_pinned_helm_says_what_helm_version_says() {
        let helm = std::env::var_os("NYL_HELM")
            .expect("NYL_HELM names the pinned helm (scripts/test sets it)");
        let asked = std::process::Command::new(&helm)
            .args(["version", "--template", "{{.Version}}"])
            .output()
            .expect("helm runs");
        let asked = String::from_utf8(asked.stdout).expect("utf-8");
        assert_eq!(helm_version(Path::new(&helm)), Some(asked));
        // Not an ELF file: no answer, nothing read past the header.
        assert_eq!(helm_version(Path::new("Cargo.toml")), None);
    }
}
