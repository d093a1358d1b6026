//! Loop detection: a stream is looping when the tail of its text repeats with a fixed
//! period for at least `min_cycles` whole cycles and at least `min_chars` characters (code
//! points); cycles of only whitespace do not count. Checked every `check_every` characters
//! over a bounded tail, one detector per channel (content, reasoning).

use crate::format::LoopFinding;

#[derive(Debug, Clone, Copy)]
pub struct LoopSettings {
    pub min_chars: usize,
    pub min_cycles: usize,
    pub check_every: usize,
    /// Longest period looked for.
    pub max_period: usize,
}

impl Default for LoopSettings {
    fn default() -> Self {
        LoopSettings { min_chars: 4096, min_cycles: 4, check_every: 256, max_period: 2048 }
    }
}

pub struct LoopDetector {
    settings: LoopSettings,
    /// The tail as UTF-8 bytes: appending is a copy, and a text that repeats with a period
    /// of P characters repeats with a period of its cycle's bytes. Counts are taken in code
    /// points once a candidate is found.
    tail: Vec<u8>,
    since_check: usize,
    cap: usize,
}

impl LoopDetector {
    pub fn new(settings: LoopSettings) -> LoopDetector {
        // UTF-8 is at most 4 bytes a character.
        let cap =
            (settings.min_chars.max(settings.max_period * settings.min_cycles) + settings.max_period).max(64) * 2 * 4;
        LoopDetector { settings, tail: Vec::new(), since_check: 0, cap }
    }

    /// Appends text; returns a finding once the tail is a loop.
    pub fn push(&mut self, text: &str, channel: &str) -> Option<LoopFinding> {
        self.tail.extend_from_slice(text.as_bytes());
        // Bytes are an upper bound of characters: checking a little early is harmless.
        self.since_check += text.len();
        if self.tail.len() > self.cap {
            let mut drop = self.tail.len() - self.cap / 2;
            while drop < self.tail.len() && (self.tail[drop] & 0xC0) == 0x80 {
                drop += 1; // keep the tail starting on a character boundary
            }
            self.tail.drain(..drop);
        }
        if self.since_check < self.settings.check_every {
            return None;
        }
        self.since_check = 0;
        self.check(channel)
    }

    fn check(&self, channel: &str) -> Option<LoopFinding> {
        let s = &self.tail;
        let n = s.len();
        let max_p = (self.settings.max_period * 4).min(n / self.settings.min_cycles.max(1));
        if max_p == 0 {
            return None;
        }
        // Only periods whose previous cycle ends with the same byte can match: find those
        // with memchr instead of trying every period.
        let last = s[n - 1];
        let candidates = memchr::memrchr_iter(last, &s[n - 1 - max_p..n - 1]).map(|j| max_p - j);
        for p in candidates {
            // Length of the suffix in which s[i] == s[i - p].
            let mut run = 0;
            while run + p < n && s[n - 1 - run] == s[n - 1 - run - p] {
                run += 1;
            }
            let repeated_bytes = run + p;
            if repeated_bytes < self.settings.min_chars || repeated_bytes / p < self.settings.min_cycles {
                continue;
            }
            // The cycle must be whole characters; a byte period inside a character is not one.
            let cycle_start = n - p;
            if (s[cycle_start] & 0xC0) == 0x80 {
                continue;
            }
            let Ok(cycle) = std::str::from_utf8(&s[cycle_start..]) else {
                continue;
            };
            let period = cycle.chars().count();
            if period > self.settings.max_period || cycle.trim().is_empty() {
                continue;
            }
            let mut start = n - repeated_bytes;
            while (s[start] & 0xC0) == 0x80 {
                start += 1;
            }
            let repeated = std::str::from_utf8(&s[start..]).map(|t| t.chars().count()).unwrap_or(0);
            if repeated < self.settings.min_chars || repeated / period < self.settings.min_cycles {
                continue;
            }
            return Some(LoopFinding {
                channel: Some(channel.to_string()),
                period_chars: Some(period as u64),
                repeated_chars: Some(repeated as u64),
                excerpt: Some(cycle.chars().take(120).collect()),
                cycle_hash: Some(format!("{:016x}", crate::units::fnv1a(cycle.as_bytes()))),
            });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(d: &mut LoopDetector, text: &str) -> Option<LoopFinding> {
        let mut found = None;
        let chars: Vec<char> = text.chars().collect();
        for piece in chars.chunks(7) {
            let piece: String = piece.iter().collect();
            if let Some(f) = d.push(&piece, "content") {
                found.get_or_insert(f);
            }
        }
        found
    }

    #[test]
    fn finds_a_repeating_tail() {
        let mut d = LoopDetector::new(LoopSettings::default());
        let mut text = String::from("an answer that starts normally and then ");
        text.push_str(&"the cat sat on the mat. ".repeat(200));
        let f = feed(&mut d, &text).expect("loop found");
        assert_eq!(f.period_chars, Some(24));
        assert!(f.repeated_chars.unwrap() >= 4096);
    }

    #[test]
    fn ignores_varied_text_whitespace_and_short_repeats() {
        let mut d = LoopDetector::new(LoopSettings::default());
        let varied: String = (0..3000).map(|i| format!("w{} ", (i * 7919) % 1013)).collect();
        assert!(feed(&mut d, &varied).is_none());
        let mut d = LoopDetector::new(LoopSettings::default());
        assert!(feed(&mut d, &" ".repeat(9000)).is_none());
        let mut d = LoopDetector::new(LoopSettings::default());
        // 3,000 repeated characters: under the 4,096 threshold.
        assert!(feed(&mut d, &format!("{}{}", varied, "ab ".repeat(1000))).is_none());
    }

    #[test]
    fn counts_code_points_not_bytes() {
        let settings = LoopSettings { min_chars: 400, min_cycles: 4, check_every: 16, max_period: 64 };
        let mut d = LoopDetector::new(settings);
        // 150 x 3 chars = 450 code points (1,350 bytes) of a 3-char cycle.
        assert!(feed(&mut d, &"é😀ü".repeat(150)).is_some());
        let mut d = LoopDetector::new(settings);
        assert!(feed(&mut d, &"é😀ü".repeat(120)).is_none());
    }
}
