//! A stable content hash: FNV-1a 64 over canonical JSON. Stable across Rust
//! versions and platforms (unlike `std::hash`), so a stored hash tells whether
//! a re-imported record changed.

use serde::Serialize;

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Hex FNV-1a of the value's JSON (struct fields serialise in declaration order),
/// hashed as it is written rather than buffered.
pub fn content_hash<T: Serialize>(value: &T) -> String {
    let mut w = FnvWriter(0xcbf2_9ce4_8422_2325);
    let _ = serde_json::to_writer(&mut w, value);
    format!("{:016x}", w.0)
}

struct FnvWriter(u64);

impl std::io::Write for FnvWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        for b in buf {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values_and_sensitivity() {
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(content_hash(&("x", 1)), content_hash(&("x", 1)));
        assert_ne!(content_hash(&("x", 1)), content_hash(&("x", 2)));
        assert_eq!(content_hash(&"a"), format!("{:016x}", fnv1a64(b"\"a\"")), "streamed equals buffered");
    }
}
