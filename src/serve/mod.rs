//! `site serve`: builds the site, serves the output folder on loopback, and rebuilds when
//! the data, templates or static assets change. A failed rebuild prints its error and the
//! last good site stays up (builds are atomic). Pages poll a tiny endpoint to reload when a
//! rebuild finished (the only script, injected by the server, never written to disk).

pub mod files;
pub mod watch;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::site::{format_steps, Site, SiteConfig};
use files::{content_type, resolve, Resolved};

const RELOAD_SCRIPT: &str = "<script>(()=>{let v=null;setInterval(async()=>{try{const r=await fetch('/__build',{cache:'no-store'});const t=await r.text();if(v!==null&&t!==v)location.reload();v=t}catch(e){}},1000)})()</script>";

pub struct ServeOptions {
    pub config: SiteConfig,
    pub bind: std::net::IpAddr,
    pub port: u16,
    pub open: bool,
    pub live_reload: bool,
    pub poll: Duration,
}

fn build(config: &SiteConfig) -> Result<String> {
    let report = Site::load(config.clone())?.build()?;
    Ok(format_steps(&report.steps))
}

struct Shared {
    root: std::path::PathBuf,
    build_id: AtomicU64,
    live_reload: bool,
}

pub fn serve(opts: ServeOptions) -> Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(serve_async(opts))
}

fn watched_dirs(config: &SiteConfig) -> Vec<std::path::PathBuf> {
    [Some(config.data_dir.clone()), config.templates_dir.clone(), config.static_dir.clone()]
        .into_iter()
        .flatten()
        .collect()
}

async fn serve_async(opts: ServeOptions) -> Result<()> {
    // The inputs as they are before the first build: an edit made during the build, or
    // between the build and the watcher's start, still triggers a rebuild.
    let initial = {
        let dirs = watched_dirs(&opts.config);
        watch::fingerprint(&dirs.iter().map(|d| d.as_path()).collect::<Vec<_>>())
    };
    match build(&opts.config) {
        Ok(steps) => println!("Built {}\n{steps}", opts.config.out_dir.display()),
        Err(e) => {
            // Nothing good to serve yet unless an earlier build is there.
            eprintln!("error: {e:#}");
            if !opts.config.out_dir.join("index.html").is_file() {
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
    use std::io::Write as _;
    let _ = std::io::stdout().flush();
    if opts.open {
        let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
        let _ = std::process::Command::new(opener).arg(&url).spawn();
    }
    let shared = Arc::new(Shared {
        root: opts.config.out_dir.clone(),
        build_id: AtomicU64::new(1),
        live_reload: opts.live_reload,
    });

    // Watcher: rebuild on change, on a blocking thread (the build is synchronous).
    let config = opts.config.clone();
    let (watch_shared, poll) = (shared.clone(), opts.poll);
    tokio::task::spawn_blocking(move || {
        let dirs = watched_dirs(&config);
        let refs = || dirs.iter().map(|d| d.as_path()).collect::<Vec<_>>();
        let mut last = initial;
        loop {
            std::thread::sleep(poll);
            let now = watch::fingerprint(&refs());
            if now == last {
                continue;
            }
            last = now;
            match build(&config) {
                Ok(steps) => {
                    watch_shared.build_id.fetch_add(1, Ordering::SeqCst);
                    println!("Rebuilt after a change\n{steps}");
                }
                Err(e) => eprintln!("error: rebuild failed, still serving the last good site: {e:#}"),
            }
            let _ = std::io::stdout().flush();
        }
    });

    let serve_loop = async {
        loop {
            let (stream, _) = listener.accept().await?;
            let shared = shared.clone();
            tokio::spawn(async move {
                let svc = service_fn(move |req| {
                    let shared = shared.clone();
                    async move { Ok::<_, Infallible>(respond(&shared, req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc).await;
            });
        }
        #[allow(unreachable_code)]
        Ok::<(), anyhow::Error>(())
    };
    tokio::select! {
        r = serve_loop => r,
        _ = tokio::signal::ctrl_c() => { println!("stopped"); Ok(()) }
    }
}

fn response(status: StatusCode, content_type: &str, body: Bytes, head: bool) -> Response<Full<Bytes>> {
    let len = body.len();
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .header("content-length", len)
        .header("cache-control", "no-cache")
        .header("x-content-type-options", "nosniff")
        .body(Full::new(if head { Bytes::new() } else { body }))
        .unwrap()
}

async fn not_found(shared: &Shared, head: bool) -> Response<Full<Bytes>> {
    let page = tokio::fs::read(shared.root.join("404.html")).await.unwrap_or_else(|_| b"<h1>Not found</h1>".to_vec());
    response(StatusCode::NOT_FOUND, "text/html; charset=utf-8", Bytes::from(page), head)
}

async fn respond(shared: &Shared, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let head = req.method() == Method::HEAD;
    if req.method() != Method::GET && !head {
        return Response::builder()
            .status(StatusCode::METHOD_NOT_ALLOWED)
            .header("allow", "GET, HEAD")
            .body(Full::new(Bytes::new()))
            .unwrap();
    }
    let path = req.uri().path();
    if path == "/__build" {
        return response(
            StatusCode::OK,
            "text/plain",
            Bytes::from(shared.build_id.load(Ordering::SeqCst).to_string()),
            head,
        );
    }
    match resolve(&shared.root, path) {
        Resolved::File(file) => match tokio::fs::read(&file).await {
            Ok(mut bytes) => {
                let ct = content_type(&file);
                if shared.live_reload && ct.starts_with("text/html") {
                    if let Some(i) = bytes.windows(7).rposition(|w| w == b"</body>") {
                        bytes.splice(i..i, RELOAD_SCRIPT.bytes());
                    }
                }
                response(StatusCode::OK, ct, Bytes::from(bytes), head)
            }
            Err(_) => not_found(shared, head).await,
        },
        Resolved::Redirect(to) => Response::builder()
            .status(StatusCode::MOVED_PERMANENTLY)
            .header("location", to)
            .body(Full::new(Bytes::new()))
            .unwrap(),
        Resolved::NotFound => not_found(shared, head).await,
        Resolved::Forbidden => {
            response(StatusCode::FORBIDDEN, "text/plain; charset=utf-8", Bytes::from_static(b"forbidden\n"), head)
        }
    }
}
