//! Stable hashes: FNV-1a for short texts kept in data, xxHash64 for page inputs.

/// FNV-1a: a stable hash (same bytes, same hash, across runs and builds), for the short
/// texts whose hash is kept in data files (a loop's cycle) or seeds the simulator.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325, |h, &b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

/// A hash of a page's inputs, over several pieces (xxHash64: stable across runs and builds,
/// and eight bytes at a time where FNV goes byte by byte: a site of 10,000 runs hashes half
/// a million leaderboard rows on every rebuild). A variable-length piece is ended by its
/// length so `("ab", "c")` and `("a", "bc")` differ. Pieces are gathered in a buffer and
/// handed to xxHash in blocks: millions of eight-byte pieces cost one streaming call per
/// block, not one each (the hash is the same: it is a hash of the bytes, however split).
#[derive(Clone)]
pub struct InputHash {
    hasher: twox_hash::XxHash64,
    buffer: [u8; HASH_BLOCK],
    len: usize,
}

const HASH_BLOCK: usize = 512;

impl Default for InputHash {
    fn default() -> Self {
        InputHash { hasher: twox_hash::XxHash64::with_seed(0), buffer: [0; HASH_BLOCK], len: 0 }
    }
}

impl InputHash {
    pub fn write(&mut self, bytes: &[u8]) {
        if self.len + bytes.len() > HASH_BLOCK {
            self.flush_block();
            if bytes.len() > HASH_BLOCK {
                std::hash::Hasher::write(&mut self.hasher, bytes);
                return;
            }
        }
        self.buffer[self.len..self.len + bytes.len()].copy_from_slice(bytes);
        self.len += bytes.len();
    }

    fn flush_block(&mut self) {
        std::hash::Hasher::write(&mut self.hasher, &self.buffer[..self.len]);
        self.len = 0;
    }

    /// A variable-length piece.
    pub fn piece(&mut self, bytes: &[u8]) -> &mut Self {
        self.write(bytes);
        self.u64(bytes.len() as u64)
    }

    /// A fixed-size piece: a number, another hash, a float's bits.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.write(&v.to_le_bytes());
        self
    }

    pub fn finish(&self) -> u64 {
        let mut hasher = self.hasher.clone();
        std::hash::Hasher::write(&mut hasher, &self.buffer[..self.len]);
        std::hash::Hasher::finish(&hasher)
    }

    /// Hashes `value` as its JSON text (the same hash as writing the text), without building
    /// the text.
    pub fn json<T: serde::Serialize + ?Sized>(&mut self, value: &T) -> &mut Self {
        let _ = serde_json::to_writer(&mut *self, value);
        self
    }
}

/// Hashing what a serializer or `write!` produces, without building it in memory first.
impl std::io::Write for InputHash {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        InputHash::write(self, bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
