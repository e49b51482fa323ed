//! An entry: Helm's bytes, the index of its documents, and a trailer of fixed length that names
//! its key and gives both lengths and the digest of the two. Written to a temporary file renamed
//! into place under the lock; read back only when whole and of its own key.

use std::fs;
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use super::bound::{shard_of, Index};
use super::seen::mark_seen;
use crate::helm::create_private_dir;
use crate::helm::digest::{self, joined, BodyDigest, Digest, BLOCK};
use crate::helm::output::{self, temp_path, Unstored, STORE_FROM};
use nyl_core::expansion::manifest::{Output, Stored};
use nyl_core::parallel;

pub(super) const MAGIC: &str = "nyl-cache-v8";

/// The length of an entry's trailer: magic, key (64 hex digits), digest (32), two lengths of 20
/// digits, the spaces between and a line break.
pub(super) const TRAILER: usize = MAGIC.len() + 1 + 64 + 1 + 32 + 1 + 20 + 1 + 20 + 1;

/// Writes an entry (`raw`, then `index`, then the trailer) to a temporary file, then moves it
/// into place.
pub(super) fn store(dir: &Path, key: &str, raw: &[u8], index: &[u8]) -> io::Result<()> {
    let mut digest = BodyDigest::default();
    digest.update(raw);
    // Parts written as they are: the output is not copied into one buffer first.
    write_entry(dir, key, (raw.len(), digest), index, |file| {
        file.write_all(raw)
    })
}

/// Writes the entry of an output kept in a file of its own ([`crate::helm::output`]), hashed as
/// it was read: the output copied from that file by the kernel, then the index and trailer.
pub(super) fn complete(entry: Unstored, key: &str, index: &[u8]) -> io::Result<()> {
    let raw = |to: &mut fs::File| copy_start(&entry.file, to, entry.len);
    write_entry(&entry.dir, key, (entry.len, entry.digest), index, raw)
}

/// Writes an entry to a temporary file, then moves it into place: the output (`raw_len` bytes,
/// hashed into `digest`) by `write_raw`, then `index`, then the trailer.
fn write_entry(
    dir: &Path,
    key: &str,
    (raw_len, mut digest): (usize, BodyDigest),
    index: &[u8],
    write_raw: impl FnOnce(&mut fs::File) -> io::Result<()>,
) -> io::Result<()> {
    let tmp = temp_path(dir);
    let result = (|| {
        let mut file = fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        write_raw(&mut file)?;
        digest.update(index);
        file.write_all(index)?;
        file.write_all(trailer(key, &digest, index.len(), raw_len).as_bytes())?;
        place(dir, &tmp, key, file.metadata()?.len())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

/// Copies the first `len` bytes of `from` to `to` at its position: by the kernel (`sendfile`,
/// which leaves `from`'s position alone), or through a buffer where it cannot.
pub(super) fn copy_start(from: &fs::File, to: &mut fs::File, len: usize) -> io::Result<()> {
    let mut at = output::send(to.as_raw_fd(), from, 0..len)?;
    let mut buf = vec![0; (len - at).min(256 << 10)];
    while at < len {
        let n = (len - at).min(buf.len());
        from.read_exact_at(&mut buf[..n], at as u64)?;
        to.write_all(&buf[..n])?;
        at += n;
    }
    Ok(())
}

/// An entry's trailer.
fn trailer(key: &str, digest: &BodyDigest, index_len: usize, raw_len: usize) -> String {
    let trailer = format!(
        "{MAGIC} {key} {} {index_len:020} {raw_len:020}\n",
        digest::to_hex(digest.finalize()),
    );
    debug_assert_eq!(trailer.len(), TRAILER);
    trailer
}

/// Renames a written entry of `len` bytes into place and counts it, under the lock so that
/// the index and the directory agree.
fn place(dir: &Path, tmp: &Path, key: &str, len: u64) -> io::Result<()> {
    // No fsync: an entry torn by a crash fails verification and is a miss, so the rename
    // alone is enough, and a render does not wait for the disk.
    let mut accounting = Index::lock(dir)?;
    let path = entry_path(dir, key);
    create_private_dir(path.parent().unwrap_or(dir))?;
    let replaced = fs::symlink_metadata(&path).map_or(0, |m| m.len());
    fs::rename(tmp, &path)?;
    accounting.add(shard_of(key), len, replaced);
    accounting.save()?;
    mark_seen(dir, key)
}

pub(super) fn entry_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(&key[..2]).join(format!("{key}.entry"))
}

/// The output an entry of `len` bytes holds, if its trailer names `key` and its digest matches
/// its content. The trailer is read first, so an entry of another key or format costs no more.
/// A large output that the run passes on as it is (`stored`) stays in the entry: its blocks are
/// read and hashed a few at a time, on two threads, and only its index and the documents to be
/// read fully are kept. Any other is read whole, with one `read` per half, the halves on two
/// threads when it is large; Helm's bytes, at the buffer's front, stay there and are what the
/// output passes on.
pub(super) fn read_entry(
    file: &fs::File,
    len: usize,
    key: &str,
    two_threads: bool,
    stored: bool,
) -> Option<Output> {
    let body = len.checked_sub(TRAILER)?;
    let mut trailer = [0; TRAILER];
    file.read_exact_at(&mut trailer, body as u64).ok()?;
    let trailer = std::str::from_utf8(&trailer).ok()?.strip_suffix('\n')?;
    let mut parts = trailer.split(' ');
    let (magic, entry_key, digest, index_len, raw_len) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?.parse::<usize>().ok()?,
        parts.next()?.parse::<usize>().ok()?,
    );
    if magic != MAGIC
        || entry_key != key
        || parts.next().is_some()
        || Some(body) != raw_len.checked_add(index_len)
    {
        return None;
    }
    let digest = digest::from_hex(digest)?;
    let workers = parallel::workers_for(body, parallel::WORTH_A_THREAD, || two_threads);
    let entry = Body {
        raw_len,
        index_len,
        digest,
    };
    if stored && raw_len >= STORE_FROM {
        read_in_place(file, &entry, workers)
    } else {
        read_whole(file, &entry, workers)
    }
}

/// An entry's body as its trailer gives it: the lengths of its two parts, and its digest.
struct Body {
    raw_len: usize,
    index_len: usize,
    digest: Digest,
}

/// A large entry's output left in its file: the blocks read and hashed a few at a time, then the
/// index and the sources of the documents to read fully.
fn read_in_place(file: &fs::File, given: &Body, workers: usize) -> Option<Output> {
    let body = given.raw_len + given.index_len;
    let blocks: Vec<usize> = (0..body.div_ceil(BLOCK)).collect();
    let digests = parallel::map(&blocks, workers, |buf: &mut Vec<u8>, &i| {
        buf.resize(BLOCK.min(body - i * BLOCK), 0);
        file.read_exact_at(buf, (i * BLOCK) as u64).ok()?;
        Some(digest::block(buf))
    });
    if joined(&digests.into_iter().collect::<Option<Vec<_>>>()?) != given.digest {
        return None;
    }
    // Entries are never written after their rename: what was verified is what is read.
    let mut index = vec![0; given.index_len];
    file.read_exact_at(&mut index, given.raw_len as u64).ok()?;
    let bytes = std::sync::Arc::new(file.try_clone().ok()?);
    let stored = Stored {
        bytes,
        len: given.raw_len,
    };
    let mut output = Output::stored(Output::decode_index(&index)?, stored)?;
    for doc in output.needing_sources() {
        let mut source = vec![0; doc.end - doc.start];
        file.read_exact_at(&mut source, doc.start as u64).ok()?;
        doc.source = Some(String::from_utf8(source).ok()?);
    }
    Some(output)
}

/// An entry's output read into one buffer, each half with one `read`.
fn read_whole(file: &fs::File, given: &Body, workers: usize) -> Option<Output> {
    let body = given.raw_len + given.index_len;
    let mut entry = vec![0; body];
    let (left, right) = entry.split_at_mut(body / 2);
    let read_half = |half: &mut [u8], at: usize| file.read_exact_at(half, at as u64).ok();
    let (left, right) = parallel::join(
        workers > 1,
        || read_half(left, 0),
        || read_half(right, body / 2),
    );
    left?;
    right?;
    let blocks: Vec<&[u8]> = entry.chunks(BLOCK).collect();
    let digests = parallel::map(&blocks, workers, |(): &mut (), block| digest::block(block));
    if joined(&digests) != given.digest {
        return None;
    }
    // Helm's bytes are checked to be UTF-8 on one thread while the index is decoded on the
    // other (the index, a few percent of the entry, is moved off the buffer's end for that).
    let index = entry.split_off(given.raw_len);
    let (docs, raw) = parallel::join(
        workers > 1 && given.raw_len >= parallel::WORTH_A_THREAD,
        || Output::decode_index(&index),
        || String::from_utf8(entry).ok(),
    );
    Output::new(docs?, raw?)
}
