//! `site serve` as a child process of the test, and raw HTTP requests to it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub addr: String,
    /// Every line the server printed on stdout and stderr so far.
    pub output: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts `site serve --port 0 ARGS` in `dir` (through `sh -c` with `shell_prefix`, e.g. a
    /// `ulimit`, when given) and waits for the URL it prints.
    pub fn start_with(dir: &Path, args: &[&str], shell_prefix: Option<&str>) -> Server {
        let site = env!("CARGO_BIN_EXE_site");
        let mut cmd = match shell_prefix {
            Some(prefix) => {
                let mut c = Command::new("sh");
                c.arg("-c").arg(format!("{prefix}; exec \"$0\" serve --port 0 \"$@\"")).arg(site).args(args);
                c
            }
            None => {
                let mut c = Command::new(site);
                c.args(["serve", "--port", "0"]).args(args);
                c
            }
        };
        let mut child =
            cmd.current_dir(dir).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("starting site serve");
        let output = Arc::new(Mutex::new(Vec::new()));
        let err_lines = output.clone();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines().map_while(Result::ok) {
                err_lines.lock().unwrap().push(l);
            }
        });
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut addr = String::new();
        for _ in 0..50 {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                break;
            }
            output.lock().unwrap().push(line.trim_end().to_string());
            if let Some(i) = line.find("http://") {
                let rest = &line[i + 7..];
                addr = rest[..rest.find('/').unwrap_or(rest.len())].to_string();
                break;
            }
        }
        assert!(addr.starts_with("127.0.0.1:"), "no URL printed: {:?}", output.lock().unwrap());
        let out_lines = output.clone();
        std::thread::spawn(move || {
            for l in reader.lines().map_while(Result::ok) {
                out_lines.lock().unwrap().push(l);
            }
        });
        Server { child, addr, output }
    }

    pub fn start(dir: &Path, args: &[&str]) -> Server {
        Server::start_with(dir, args, None)
    }

    pub fn printed(&self) -> String {
        self.output.lock().unwrap().join("\n")
    }

    /// Waits up to 20 s for the server to print `needle` (a line on stderr may trail one on
    /// stdout, and a rebuild's report the pages it wrote).
    pub fn wait_printed(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.printed().contains(needle) {
            assert!(Instant::now() < deadline, "serve never printed {needle:?}: {}", self.printed());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits up to 20 s for `path` to answer with a body holding `needle`; returns the body.
    pub fn wait_page(&self, path: &str, needle: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, _, body) = get(&self.addr, path);
            if body.contains(needle) {
                return body;
            }
            assert!(Instant::now() < deadline, "{path} never showed {needle:?}: {}", self.printed());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A raw GET, so the path reaches the server exactly as written: (status, lower-case head, body).
pub fn get(addr: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut resp = Vec::new();
    s.read_to_end(&mut resp).unwrap();
    let resp = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap_or((&resp, ""));
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, head.to_ascii_lowercase(), body.to_string())
}
