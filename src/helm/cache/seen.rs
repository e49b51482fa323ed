//! The `seen` file: which inputs an entry was ever stored under, so that a render no lookup can
//! find starts Helm before its chart is hashed.

use std::fs;
use std::io;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

/// The hex digits of a key that are its inputs': one bit of the [`SEEN`] file each.
pub(super) const SEEN_DIGITS: usize = 4;

/// The file of the inputs entries were stored under: a bitmap (8 KiB), a bit for each value of a
/// key's first [`SEEN_DIGITS`] hex digits, set under the lock as an entry is placed and never
/// cleared. A bit not set means no entry of those inputs can be there, so Helm starts before
/// the chart is hashed; a set one (or no way to tell) means a lookup. Wrong only the safe
/// way: a file lost or torn, or a bit set by other inputs, costs a lookup or a render, never
/// a wrong output.
pub(super) const SEEN: &str = "seen";

/// The byte of the [`SEEN`] file that holds a key's bit, and the bit.
pub(super) fn seen_bit(key: &str) -> Option<(u64, u8)> {
    let n = u64::from_str_radix(key.get(..SEEN_DIGITS)?, 16).ok()?;
    Some((n / 8, 1 << (n % 8)))
}

/// Sets `key`'s bit in the [`SEEN`] file; under the lock.
pub(super) fn mark_seen(dir: &Path, key: &str) -> io::Result<()> {
    let Some((at, bit)) = seen_bit(key) else {
        return Ok(());
    };
    let file = fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join(SEEN))?;
    let mut byte = [0];
    if file.read_at(&mut byte, at)? == 0 {
        byte[0] = 0;
    }
    if byte[0] & bit == 0 {
        file.write_all_at(&[byte[0] | bit], at)?;
    }
    Ok(())
}
