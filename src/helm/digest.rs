//! The digest of a cache entry's body, by blocks: what lets a write hash the body as Helm prints
//! it ([`crate::helm::output`]) and a hit verify its blocks on two threads
//! ([`crate::helm::cache`]).
//!
//! XXH3 (128 bits), not a cryptographic hash: the digest finds a torn, truncated or corrupt
//! entry, and nothing more is asked of it. Whatever selects an entry (its key, in its name and
//! trailer) stays BLAKE3; anyone who could write an entry with a chosen body could write its
//! digest as well, whichever hash it were, which is why only the user's own entries are read.
//! BLAKE3 over a 5 MB output cost a cold render about 1.5 ms of CPU while Helm exits, and every
//! warm render as much again (docs/performance.md).

use xxhash_rust::xxh3::{xxh3_128, Xxh3Default};

/// The block size of [`BodyDigest`].
pub const BLOCK: usize = 256 << 10;

/// A digest, as [`BodyDigest::finalize`] and [`joined`] give it.
pub type Digest = u128;

/// The digest of an entry's body: the XXH3 of the XXH3 digests of its blocks of [`BLOCK`] bytes
/// (the last one shorter), in order. A write hashes the body as it goes; a hit hashes the
/// blocks on two threads.
#[derive(Default)]
pub struct BodyDigest {
    block: Xxh3Default,
    filled: usize,
    blocks: Vec<u8>,
}

impl BodyDigest {
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = (BLOCK - self.filled).min(bytes.len());
            self.block.update(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == BLOCK {
                self.blocks
                    .extend_from_slice(&self.block.digest128().to_le_bytes());
                self.block.reset();
                self.filled = 0;
            }
        }
    }

    pub fn finalize(&self) -> Digest {
        let mut blocks = self.blocks.clone();
        if self.filled > 0 {
            blocks.extend_from_slice(&self.block.digest128().to_le_bytes());
        }
        xxh3_128(&blocks)
    }
}

/// The digest of one block.
pub fn block(bytes: &[u8]) -> Digest {
    xxh3_128(bytes)
}

/// The digest of the blocks' digests, as [`BodyDigest::finalize`] gives it.
pub fn joined(digests: &[Digest]) -> Digest {
    let bytes: Vec<u8> = digests.iter().flat_map(|d| d.to_le_bytes()).collect();
    xxh3_128(&bytes)
}

/// A digest as the trailer writes it: 32 hex digits.
pub fn to_hex(digest: Digest) -> String {
    format!("{digest:032x}")
}

/// A digest as the trailer writes it, read back; `None` for anything but 32 hex digits.
pub fn from_hex(text: &str) -> Option<Digest> {
    (text.len() == 32 && text.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| Digest::from_str_radix(text, 16).ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_digest_is_the_digest_of_its_blocks_however_it_is_fed() {
        let bytes: Vec<u8> = (0..(3 * BLOCK + 4097)).map(|i| (i % 251) as u8).collect();
        for len in [0, 1, 1000, BLOCK - 1, BLOCK, BLOCK + 1, bytes.len()] {
            let whole = &bytes[..len];
            let expected = joined(&whole.chunks(BLOCK).map(block).collect::<Vec<_>>());
            for piece in [1, 4096, BLOCK - 1, BLOCK, len.max(1)] {
                let mut digest = BodyDigest::default();
                whole.chunks(piece).for_each(|p| digest.update(p));
                assert_eq!(digest.finalize(), expected, "{len} in pieces of {piece}");
            }
        }
        let digest = |bytes: &[u8]| {
            let mut d = BodyDigest::default();
            d.update(bytes);
            d.finalize()
        };
        assert_ne!(digest(b"ab"), digest(b"ba"));
    }

    #[test]
    fn a_digest_reads_back_as_written_and_nothing_else_does() {
        for d in [0, 1, u128::MAX, block(b"nyl")] {
            let hex = to_hex(d);
            assert_eq!(hex.len(), 32);
            assert_eq!(from_hex(&hex), Some(d));
        }
        let hex = to_hex(block(b"nyl"));
        for bad in [
            &hex[1..],
            &format!("{hex}0"),
            &format!("+{}", &hex[1..]),
            "",
        ] {
            assert_eq!(from_hex(bad), None, "{bad:?}");
        }
    }
}
