//! Incremental Server-Sent Events parsing: bytes arrive in arbitrary pieces; complete
//! `data:` payloads come out. OpenAI-compatible servers send one `data:` line per event.

/// The longest line kept: a server that never sends a line end cannot fill memory.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Feeds on raw body bytes and yields each complete `data:` line's payload.
#[derive(Default)]
pub struct SseParser {
    partial: Vec<u8>,
    /// Inside a line that went over the limit: its bytes are dropped up to its end.
    skipping: bool,
}

/// What one line of the stream was.
#[derive(Debug, PartialEq, Eq)]
pub enum SseLine<'a> {
    Data(&'a [u8]),
    /// `data: [DONE]`
    Done,
    /// A line longer than [`MAX_LINE_BYTES`] (its bytes are dropped).
    TooLong,
}

impl SseParser {
    /// Calls `on_line` for every complete `data:` line in `bytes` (plus what was buffered).
    /// Comments (`:`), `event:`/`id:`/`retry:` fields and blank lines are skipped.
    pub fn feed<E>(&mut self, bytes: &[u8], mut on_line: impl FnMut(SseLine<'_>) -> Result<(), E>) -> Result<(), E> {
        let mut rest = bytes;
        if self.skipping {
            match memchr::memchr(b'\n', rest) {
                None => return Ok(()),
                Some(i) => {
                    self.skipping = false;
                    rest = &rest[i + 1..];
                }
            }
        }
        if !self.partial.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.partial.extend_from_slice(rest);
                    return self.check_length(&mut on_line);
                }
                Some(i) => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&rest[..i]);
                    rest = &rest[i + 1..];
                    if line.len() > MAX_LINE_BYTES {
                        on_line(SseLine::TooLong)?;
                    } else {
                        handle(&line, &mut on_line)?;
                    }
                }
            }
        }
        while let Some(i) = memchr::memchr(b'\n', rest) {
            if i > MAX_LINE_BYTES {
                on_line(SseLine::TooLong)?;
            } else {
                handle(&rest[..i], &mut on_line)?;
            }
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
        self.check_length(&mut on_line)
    }

    fn check_length<E>(&mut self, on_line: &mut impl FnMut(SseLine<'_>) -> Result<(), E>) -> Result<(), E> {
        if self.partial.len() > MAX_LINE_BYTES {
            self.partial = Vec::new();
            self.skipping = true;
            return on_line(SseLine::TooLong);
        }
        Ok(())
    }

    /// Bytes left without a line end when the stream closed.
    pub fn leftover(&self) -> &[u8] {
        &self.partial
    }
}

fn handle<E>(line: &[u8], on_line: &mut impl FnMut(SseLine<'_>) -> Result<(), E>) -> Result<(), E> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if let Some(payload) = line.strip_prefix(b"data:") {
        let payload = payload.strip_prefix(b" ").unwrap_or(payload);
        if payload == b"[DONE]" {
            return on_line(SseLine::Done);
        }
        return on_line(SseLine::Data(payload));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(pieces: &[&[u8]]) -> Vec<String> {
        let mut p = SseParser::default();
        let mut out = Vec::new();
        for piece in pieces {
            p.feed::<()>(piece, |l| {
                out.push(match l {
                    SseLine::Data(d) => String::from_utf8_lossy(d).into_owned(),
                    SseLine::Done => "[DONE]".into(),
                    SseLine::TooLong => "<too long>".into(),
                });
                Ok(())
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn lines_split_across_pieces() {
        let out =
            collect(&[b"data: {\"a\"", b":1}\n\nda", b"ta: {\"b\":2}\r\n\r\n: comment\nevent: x\ndata: [DONE]\n\n"]);
        assert_eq!(out, ["{\"a\":1}", "{\"b\":2}", "[DONE]"]);
    }

    #[test]
    fn one_byte_at_a_time() {
        let text = b"data: {\"x\":\"y\"}\n\ndata: [DONE]\n\n";
        let pieces: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(collect(&pieces), ["{\"x\":\"y\"}", "[DONE]"]);
    }

    #[test]
    fn endless_lines_are_cut_and_the_stream_goes_on() {
        let big = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut p = SseParser::default();
        let mut seen = Vec::new();
        for piece in big.chunks(4096) {
            p.feed::<()>(piece, |l| {
                seen.push(format!("{l:?}"));
                Ok(())
            })
            .unwrap();
        }
        assert!(p.partial.len() <= MAX_LINE_BYTES);
        p.feed::<()>(b"yyy\ndata: 1\n", |l| {
            seen.push(format!("{l:?}"));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, ["TooLong", "Data([49])"]);
    }

    mod generated {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            /// However the bytes are split, the same lines come out, and nothing panics.
            #[test]
            fn splitting_never_changes_the_lines(
                events in proptest::collection::vec("[a-z{}:\" 0-9]{0,40}", 0..12),
                junk in proptest::collection::vec(any::<u8>(), 0..64),
                cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
            ) {
                let mut text: Vec<u8> = Vec::new();
                for e in &events {
                    text.extend_from_slice(format!("data: {e}\r\n\n").as_bytes());
                }
                let whole = lines(&[&text]);
                let mut at: Vec<usize> = cuts.iter().map(|c| c.index(text.len() + 1)).collect();
                at.sort_unstable();
                let mut pieces: Vec<&[u8]> = Vec::new();
                let mut last = 0;
                for a in at {
                    pieces.push(&text[last..a]);
                    last = a;
                }
                pieces.push(&text[last..]);
                prop_assert_eq!(lines(&pieces), whole.clone());
                prop_assert_eq!(whole.len(), events.len());
                let _ = lines(&[&junk, &text]);
            }
        }

        fn lines(pieces: &[&[u8]]) -> Vec<String> {
            let mut p = SseParser::default();
            let mut out = Vec::new();
            for piece in pieces {
                p.feed::<()>(piece, |l| {
                    out.push(format!("{l:?}"));
                    Ok(())
                })
                .unwrap();
            }
            out
        }
    }
}
