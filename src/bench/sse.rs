//! Incremental Server-Sent Events parsing: bytes arrive in arbitrary pieces; complete
//! `data:` payloads come out. OpenAI-compatible servers send one `data:` line per event.

/// Feeds on raw body bytes and yields each complete `data:` line's payload.
#[derive(Default)]
pub struct SseParser {
    partial: Vec<u8>,
}

/// What one line of the stream was.
#[derive(Debug, PartialEq, Eq)]
pub enum SseLine<'a> {
    Data(&'a [u8]),
    /// `data: [DONE]`
    Done,
}

impl SseParser {
    /// Calls `on_line` for every complete `data:` line in `bytes` (plus what was buffered).
    /// Comments (`:`), `event:`/`id:`/`retry:` fields and blank lines are skipped.
    pub fn feed<E>(&mut self, bytes: &[u8], mut on_line: impl FnMut(SseLine<'_>) -> Result<(), E>) -> Result<(), E> {
        let mut rest = bytes;
        if !self.partial.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.partial.extend_from_slice(rest);
                    return Ok(());
                }
                Some(i) => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&rest[..i]);
                    rest = &rest[i + 1..];
                    handle(&line, &mut on_line)?;
                }
            }
        }
        while let Some(i) = memchr::memchr(b'\n', rest) {
            handle(&rest[..i], &mut on_line)?;
            rest = &rest[i + 1..];
        }
        self.partial.extend_from_slice(rest);
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
}
