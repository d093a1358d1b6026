//! A launched server's output, read from a pipe as it comes: each line scrubbed of secrets
//! before it is kept, and only the last [`MAX_LOG_BYTES`] kept, in memory. Nothing of it
//! touches the disk until the run writes its `server.log` (already scrubbed), so no copy with
//! a key in it is left anywhere, whatever ends the bench, and a chatty server costs a
//! bounded amount of memory.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};

/// The most of one process's output kept (its end).
pub const MAX_LOG_BYTES: usize = 1 << 20;
/// A line longer than this is cut (the rest of it is dropped up to its end).
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// Scrubs one line of output.
pub type Scrub = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// The kept end of one process's output, filled by a reader thread.
#[derive(Clone, Default)]
pub struct Output {
    tail: Arc<Mutex<Tail>>,
    /// The pipe reached its end (every process closed it).
    ended: Arc<std::sync::atomic::AtomicBool>,
}

#[derive(Default)]
struct Tail {
    lines: VecDeque<String>,
    bytes: usize,
    /// Lines dropped from the front to keep the bound.
    dropped: u64,
}

impl Tail {
    fn push(&mut self, line: String) {
        self.bytes += line.len() + 1;
        self.lines.push_back(line);
        while self.bytes > MAX_LOG_BYTES {
            let Some(first) = self.lines.pop_front() else { break };
            self.bytes -= first.len() + 1;
            self.dropped += 1;
        }
    }
}

impl Output {
    /// Reads `pipe` to its end on a thread of its own, keeping each line scrubbed.
    pub fn read_from(pipe: impl Read + Send + 'static, scrub: Scrub) -> Output {
        let output = Output::default();
        let (tail, ended) = (output.tail.clone(), output.ended.clone());
        std::thread::spawn(move || {
            let mut lines = LineSplitter::default();
            let mut pipe = pipe;
            let mut buf = vec![0u8; 64 * 1024];
            let keep = |line: String| tail.lock().unwrap_or_else(|e| e.into_inner()).push(scrub(&line));
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => lines.push(&buf[..n]).into_iter().for_each(keep),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            lines.finish().into_iter().for_each(keep);
            ended.store(true, std::sync::atomic::Ordering::Release);
        });
        output
    }

    /// Waits up to `limit` for the pipe's end (its last lines read).
    pub async fn ended_within(&self, limit: std::time::Duration) {
        let t = std::time::Instant::now();
        while !self.ended.load(std::sync::atomic::Ordering::Acquire) && t.elapsed() < limit {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    /// What is kept, from a line start; where earlier lines were dropped, it says how many.
    pub fn text(&self) -> String {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = String::with_capacity(tail.bytes + 64);
        if tail.dropped > 0 {
            out.push_str(&format!("[{} earlier lines not kept]\n", tail.dropped));
        }
        for line in &tail.lines {
            out.push_str(line);
            out.push('\n');
        }
        out
    }

    /// The last `n` lines that are not blank, joined by ` | ` (an error is printed on one line).
    pub fn last_lines(&self, n: usize) -> String {
        let tail = self.tail.lock().unwrap_or_else(|e| e.into_inner());
        let lines: Vec<&str> =
            tail.lines.iter().rev().filter(|l| !l.trim().is_empty()).take(n).map(String::as_str).collect();
        lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
    }
}

/// Bytes into lines of at most [`MAX_LINE_BYTES`] (text read as UTF-8, lossily).
#[derive(Default)]
struct LineSplitter {
    line: Vec<u8>,
    /// The current line was cut: its rest is skipped up to the next newline.
    cut: bool,
}

impl LineSplitter {
    fn push(&mut self, mut bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let end = memchr::memchr(b'\n', bytes);
            let chunk = &bytes[..end.unwrap_or(bytes.len())];
            if !self.cut {
                let room = MAX_LINE_BYTES - self.line.len();
                self.line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if chunk.len() > room {
                    self.cut = true;
                    out.push(self.take(true));
                }
            }
            match end {
                Some(i) => {
                    if !std::mem::take(&mut self.cut) {
                        out.push(self.take(false));
                    }
                    bytes = &bytes[i + 1..];
                }
                None => break,
            }
        }
        out
    }

    fn finish(&mut self) -> Option<String> {
        (!self.line.is_empty()).then(|| self.take(false))
    }

    fn take(&mut self, cut: bool) -> String {
        let bytes = std::mem::take(&mut self.line);
        let mut text = String::from_utf8_lossy(&bytes).trim_end_matches('\r').to_string();
        if cut {
            text.push_str(" [line cut]");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_reads_and_long_lines_cut() {
        let mut s = LineSplitter::default();
        assert_eq!(s.push(b"first li"), Vec::<String>::new());
        assert_eq!(s.push(b"ne\r\nsecond\nthi"), ["first line", "second"]);
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let got = s.push(&long);
        assert_eq!(got.len(), 1);
        assert!(got[0].starts_with("thixx") && got[0].ends_with(" [line cut]"), "{}", &got[0][..10]);
        assert_eq!(got[0].len(), MAX_LINE_BYTES + " [line cut]".len());
        assert_eq!(s.push(b"yyy\nafter\n"), ["after"], "the rest of a cut line is skipped");
        assert_eq!(s.push(b"no newline"), Vec::<String>::new());
        assert_eq!(s.finish().as_deref(), Some("no newline"));
    }

    #[test]
    fn only_the_end_is_kept_and_every_line_is_scrubbed() {
        let scrub: Scrub = Arc::new(|l: &str| l.replace("KEY", "<redacted>"));
        let text: String = (0..40_000).map(|i| format!("line {i} with KEY in it\n")).collect();
        let out = Output::read_from(std::io::Cursor::new(text.into_bytes()), scrub);
        let t0 = std::time::Instant::now();
        while !out.text().contains("line 39999") && t0.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let kept = out.text();
        assert!(kept.len() <= MAX_LOG_BYTES + 64, "{}", kept.len());
        assert!(kept.starts_with('[') && kept.contains("earlier lines not kept"), "{}", &kept[..80]);
        assert!(kept.contains("line 39999 with <redacted> in it") && !kept.contains("KEY"));
        assert_eq!(out.last_lines(2), "line 39998 with <redacted> in it | line 39999 with <redacted> in it");
    }
}
