//! The digest of a cache entry's body, by blocks: what lets a write hash the body as Helm prints
//! it ([`crate::helm::output`]) and a hit verify its blocks on two threads
//! ([`crate::helm::cache`]).

/// The block size of [`BodyDigest`].
pub const BLOCK: usize = 256 << 10;

/// The digest of an entry's body: the BLAKE3 of the BLAKE3 digests of its blocks of [`BLOCK`]
/// bytes (the last one shorter), in order. A write hashes the body as it goes; a hit hashes the
/// blocks on two threads.
#[derive(Default)]
pub struct BodyDigest {
    block: blake3::Hasher,
    filled: usize,
    blocks: blake3::Hasher,
}

impl BodyDigest {
    pub fn update(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let n = (BLOCK - self.filled).min(bytes.len());
            self.block.update(&bytes[..n]);
            self.filled += n;
            bytes = &bytes[n..];
            if self.filled == BLOCK {
                self.blocks.update(self.block.finalize().as_bytes());
                self.block.reset();
                self.filled = 0;
            }
        }
    }

    pub fn finalize(&self) -> blake3::Hash {
        let mut blocks = self.blocks.clone();
        if self.filled > 0 {
            blocks.update(self.block.finalize().as_bytes());
        }
        blocks.finalize()
    }
}

/// The digest of the blocks' digests, as [`BodyDigest::finalize`] gives it.
pub fn joined(digests: Vec<blake3::Hash>) -> blake3::Hash {
    let mut h = blake3::Hasher::new();
    for d in digests {
        h.update(d.as_bytes());
    }
    h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_digest_is_the_digest_of_its_blocks_however_it_is_fed() {
        let bytes: Vec<u8> = (0..(3 * BLOCK + 4097)).map(|i| (i % 251) as u8).collect();
        for len in [0, 1, 1000, BLOCK - 1, BLOCK, BLOCK + 1, bytes.len()] {
            let whole = &bytes[..len];
            let expected = joined(whole.chunks(BLOCK).map(blake3::hash).collect());
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
}
