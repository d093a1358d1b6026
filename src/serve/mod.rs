//! `site serve`: builds the site, serves the output folder on loopback, and rebuilds when
//! the data, templates or static assets change. A failed rebuild prints its error and the
//! last good site stays up (builds are atomic). Pages hear of each finished rebuild over a
//! WebSocket and reload (`reload`: the only script, injected by the server, never written to
//! disk).

pub mod files;
pub mod reload;
pub mod watch;

use std::io::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use tokio::net::TcpListener;
use tokio_util::io::ReaderStream;

use crate::site::{format_steps, Site, SiteConfig};
use crate::units::terminal_safe;
use crate::write::OutputIndex;
use files::{content_type, resolve, Resolved};

/// How long events keep coming after the first one of a change (a save is several).
const SETTLE: Duration = Duration::from_millis(30);

pub struct ServeOptions {
    pub config: SiteConfig,
    pub bind: std::net::IpAddr,
    pub port: u16,
    pub open: bool,
    pub live_reload: bool,
    pub poll: Duration,
}

/// The site being served and how to bring it up to date.
struct Builder {
    config: SiteConfig,
    /// The last site loaded; `None` after a failed load (the next change loads it whole).
    site: Option<Site>,
    /// What the last build wrote into the output folder (serve is its only writer).
    written: OutputIndex,
}

impl Builder {
    /// Loads what `change` asks for (only the changed runs where it can) and writes the
    /// pages that differ into the output folder.
    fn rebuild(&mut self, change: watch::Change) -> Result<String> {
        let site = match (self.site.take(), change) {
            (Some(site), watch::Change::Runs(ids)) => site.reload_runs(&ids)?,
            _ => Site::load(self.config.clone())?,
        };
        let report = site.build_in_place(&mut self.written)?;
        self.site = Some(site);
        Ok(format_steps(&report.steps))
    }
}

struct Shared {
    root: std::path::PathBuf,
    builds: reload::Builds,
    live_reload: bool,
}

/// Every build on one thread of its own: the first at once (its result on the returned
/// receiver), then one per change once serving started (a message on the returned sender;
/// dropping it ends the thread). A rebuild then finds the memory its allocator needs already
/// touched by the first build, where a fresh thread's first rebuild read one run in 8-70 ms
/// instead of 0.5.
fn start_builds(
    mut builder: Builder,
    changes: watch::Changes,
    shared: Arc<Shared>,
) -> (std::sync::mpsc::Receiver<Result<String>>, std::sync::mpsc::Sender<()>) {
    let (first_tx, first_rx) = std::sync::mpsc::sync_channel(1);
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if first_tx.send(builder.rebuild(watch::Change::Everything)).is_err() || go_rx.recv().is_err() {
            return;
        }
        while let Some(change) = changes.next(SETTLE) {
            let t = std::time::Instant::now();
            match builder.rebuild(change) {
                Ok(steps) => {
                    shared.builds.finished();
                    println!("Rebuilt after a change in {:.1} ms\n{steps}", t.elapsed().as_secs_f64() * 1000.0);
                }
                Err(e) => eprintln!(
                    "error: rebuild failed, still serving the last good site: {}",
                    terminal_safe(&format!("{e:#}"))
                ),
            }
            let _ = std::io::stdout().flush();
        }
    });
    (first_rx, go_tx)
}

pub fn serve(opts: ServeOptions) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    let result = rt.block_on(serve_async(opts));
    // Connections still open and a rebuild in progress must not hold up the exit.
    rt.shutdown_background();
    result
}

/// What the watcher ignores: the output folder and its build's staging folders and lock,
/// which a build writes (an output folder inside a watched folder must not rebuild forever).
fn ignored_outputs(config: &SiteConfig) -> watch::Ignore {
    let siblings = crate::write::Siblings::of(&config.out_dir);
    let lock_name = siblings.lock().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let cache_name = siblings.build_cache().file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut prefixes = siblings.folder_prefixes().to_vec();
    prefixes.extend([lock_name, cache_name]);
    watch::Ignore {
        dirs: vec![watch::absolute(&config.out_dir)],
        parent: siblings.parent.canonicalize().unwrap_or(siblings.parent),
        prefixes,
    }
}

async fn serve_async(opts: ServeOptions) -> Result<()> {
    // Watching starts before the first build: an edit made during it still rebuilds.
    let inputs = watch::Inputs::of(&opts.config, ignored_outputs(&opts.config));
    let changes = watch::Changes::start(inputs, opts.poll)?;
    let changes_kind = changes.kind.clone();
    let builder = Builder { config: opts.config.clone(), site: None, written: OutputIndex::default() };
    let shared = Arc::new(Shared {
        root: opts.config.out_dir.clone(),
        builds: reload::Builds::default(),
        live_reload: opts.live_reload,
    });
    let (first, go) = start_builds(builder, changes, shared.clone());
    match first.recv().context("the build thread stopped")? {
        Ok(steps) => println!("Built {}\n{steps}", opts.config.out_dir.display()),
        Err(e) => {
            // Nothing good to serve yet unless an earlier build of ours is there: a folder
            // without our marker is one `site build` refused, and is never served.
            eprintln!("error: {}", terminal_safe(&format!("{e:#}")));
            let ours = opts.config.out_dir.join(crate::write::MARKER).is_file();
            if !ours || !opts.config.out_dir.join("index.html").is_file() {
                return Err(e.context("the first build failed and there is no earlier site to serve"));
            }
            eprintln!("serving the previous site in {}", opts.config.out_dir.display());
        }
    }
    let listener = TcpListener::bind(SocketAddr::new(opts.bind, opts.port))
        .await
        .with_context(|| format!("binding {}:{}", opts.bind, opts.port))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}/");
    println!("Serving {} at {url} (Ctrl-C to stop)", opts.config.out_dir.display());
    let _ = std::io::stdout().flush();
    if opts.open {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        let _ = std::process::Command::new(opener).arg(&url).spawn();
    }
    // Rebuilds start once serving does (the process does not wait for the build thread
    // when it exits).
    println!("Watching for changes ({})", changes_kind);
    let _ = go.send(());

    let serve_loop = crate::httpserve::accept_loop(listener, None, move |req| {
        let shared = shared.clone();
        async move { respond(&shared, req).await }
    });
    tokio::select! {
        _ = serve_loop => Ok(()),
        _ = tokio::signal::ctrl_c() => { println!("stopped"); Ok(()) }
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

fn full(bytes: Bytes) -> Body {
    Full::new(bytes).map_err(|never| match never {}).boxed()
}

fn response(status: StatusCode, content_type: &str, body: Bytes, head: bool) -> Response<Body> {
    let len = body.len() as u64;
    respond_with(status, content_type, len, if head { full(Bytes::new()) } else { full(body) })
}

fn respond_with(status: StatusCode, content_type: &str, len: u64, body: Body) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-length", len)
        .header("cache-control", "no-cache")
        .header("x-content-type-options", "nosniff")
        .body(body)
        .expect("a response from valid parts")
}

async fn not_found(shared: &Shared, head: bool) -> Response<Body> {
    let page = tokio::fs::read(shared.root.join("404.html")).await.unwrap_or_else(|_| b"<h1>Not found</h1>".to_vec());
    response(StatusCode::NOT_FOUND, "text/html; charset=utf-8", Bytes::from(page), head)
}

/// A file as a stream of chunks (memory stays flat however large the file and however many
/// clients); HTML pages get the reload script after their last byte, where browsers run it.
async fn file_response(shared: &Shared, path: &std::path::Path, head: bool) -> Option<Response<Body>> {
    let file = tokio::fs::File::open(path).await.ok()?;
    let len = file.metadata().await.ok()?.len();
    let ct = content_type(path);
    // The build is read before the file, so a page written by a later build reloads once more
    // at worst, never misses a build.
    let script = (shared.live_reload && ct.starts_with("text/html")).then(|| reload::script(shared.builds.last()));
    let extra = script.as_ref().map_or(0, |s| s.len() as u64);
    if head {
        return Some(respond_with(StatusCode::OK, ct, len + extra, full(Bytes::new())));
    }
    // The length is the one announced: a file that grows meanwhile is not read past it.
    let chunks = ReaderStream::new(tokio::io::AsyncReadExt::take(file, len));
    let tail = futures_util::stream::iter(script.map(|s| Ok(Bytes::from(s))));
    let body = StreamBody::new(chunks.chain(tail).map(|r| r.map(Frame::data)));
    Some(respond_with(StatusCode::OK, ct, len + extra, BodyExt::boxed(body)))
}

async fn respond(shared: &Shared, mut req: Request<Incoming>) -> Response<Body> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        return Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header("allow", "GET, HEAD")
            .body(full(Bytes::new()))
            .expect("a response from valid parts");
    }
    if req.uri().path() == reload::PATH {
        if let Some(upgraded) = shared.builds.upgrade(&mut req) {
            return upgraded.map(|body| body.map_err(|never| match never {}).boxed());
        }
        return response(StatusCode::OK, "text/plain", Bytes::from(shared.builds.last().to_string()), head);
    }
    let path = req.uri().path();
    match resolve(&shared.root, path) {
        Resolved::File(file) => match file_response(shared, &file, head).await {
            Some(r) => r,
            None => not_found(shared, head).await,
        },
        Resolved::Redirect(to) => Response::builder()
            .status(StatusCode::MOVED_PERMANENTLY)
            .header("location", to)
            .body(full(Bytes::new()))
            .expect("a response from valid parts"),
        Resolved::NotFound => not_found(shared, head).await,
        Resolved::Forbidden => {
            response(StatusCode::FORBIDDEN, "text/plain; charset=utf-8", Bytes::from_static(b"forbidden\n"), head)
        }
    }
}
