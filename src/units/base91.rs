//! basE91 (Joachim Henke's encoding): bytes as text of 91 printable ASCII characters, about
//! 23% larger than the bytes where base64 is 33%. It carries a run's gzipped evidence inside
//! a script (`evidence.js`) that a page loads from `file://` as from any host: text is the
//! only form a script tag can bring, and the evidence is the largest file a run publishes.
//! The alphabet has no `'` and no `\`, so the text sits in a single-quoted JS string as it is.
//! Hand-written: the algorithm is twenty lines, and no crate for it is kept up.

/// The 91 characters, in the order of their values.
pub const ALPHABET: &[u8; 91] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789!#$%&()*+,./:;<=>?@[]^_`{|}~\"";

/// `bytes` as basE91 text.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = Vec::with_capacity(bytes.len() * 5 / 4 + 2);
    let (mut b, mut n) = (0u32, 0u32);
    let push = |v: u32, out: &mut Vec<u8>| {
        out.push(ALPHABET[(v % 91) as usize]);
        out.push(ALPHABET[(v / 91) as usize]);
    };
    for &byte in bytes {
        b |= u32::from(byte) << n;
        n += 8;
        if n > 13 {
            let mut v = b & 8191;
            if v > 88 {
                b >>= 13;
                n -= 13;
            } else {
                v = b & 16383;
                b >>= 14;
                n -= 14;
            }
            push(v, &mut out);
        }
    }
    if n > 0 {
        out.push(ALPHABET[(b % 91) as usize]);
        if n > 7 || b > 90 {
            out.push(ALPHABET[(b / 91) as usize]);
        }
    }
    String::from_utf8(out).expect("the alphabet is ASCII")
}

/// basE91 `text` as bytes; `None` at a character outside the alphabet.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let mut value = [None; 256];
    for (i, &c) in ALPHABET.iter().enumerate() {
        value[c as usize] = Some(i as u32);
    }
    let mut out = Vec::with_capacity(text.len() * 4 / 5 + 1);
    let (mut v, mut b, mut n) = (None::<u32>, 0u32, 0u32);
    for &c in text.as_bytes() {
        let d = value[c as usize]?;
        match v {
            None => v = Some(d),
            Some(low) => {
                let x = low + d * 91;
                b |= x << n;
                n += if x & 8191 > 88 { 13 } else { 14 };
                while n > 7 {
                    out.push((b & 255) as u8);
                    b >>= 8;
                    n -= 8;
                }
                v = None;
            }
        }
    }
    if let Some(low) = v {
        out.push(((b | low << n) & 255) as u8);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_length_and_byte() {
        let mut seed = 0x2545_f491_u32;
        for len in 0..300 {
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    seed as u8
                })
                .collect();
            let text = encode(&bytes);
            assert!(!text.contains(['\'', '\\']), "{text}");
            assert_eq!(decode(&text).unwrap(), bytes, "length {len}");
        }
        let all: Vec<u8> = (0..=255).collect();
        assert_eq!(decode(&encode(&all)).unwrap(), all);
    }

    #[test]
    fn known_text_and_a_foreign_character() {
        // The reference implementation's encoding of "test".
        assert_eq!(encode(b"test"), "fPNKd");
        assert_eq!(decode("fPNKd").unwrap(), b"test");
        assert_eq!(decode("fP'Kd"), None);
    }

    #[test]
    fn smaller_than_base64() {
        let bytes: Vec<u8> = (0..9000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
        let text = encode(&bytes);
        assert!(text.len() * 100 < bytes.len() * 125, "{} of {}", text.len(), bytes.len());
    }
}
