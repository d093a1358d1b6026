//! Leaf: the one HTTP/1.1 accept loop, for `site serve` and the simulated engine (plain, or
//! TLS for the simulator's https tests), upgrades allowed (serve's live-reload WebSocket).
//! A failed accept (out of file descriptors, or another passing failure) is reported and
//! retried with a growing pause instead of ending the server.

use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;

use hyper::body::{Body, Incoming};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// Serves every connection of `listener` with `handle`, until the future is dropped; over
/// TLS when `tls` is given (a failed handshake drops that connection only).
pub async fn accept_loop<H, F, B>(listener: TcpListener, tls: Option<tokio_rustls::TlsAcceptor>, handle: H)
where
    H: Fn(Request<Incoming>) -> F + Clone + Send + Sync + 'static,
    F: Future<Output = Response<B>> + Send + 'static,
    B: Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut backoff = Duration::from_millis(10);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => {
                backoff = Duration::from_millis(10);
                stream
            }
            Err(e) => {
                eprintln!("warning: accepting a connection failed: {e}; retrying in {} ms", backoff.as_millis());
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            let svc = service_fn(move |req| {
                let response = handle(req);
                async move { Ok::<_, Infallible>(response.await) }
            });
            let http = hyper::server::conn::http1::Builder::new();
            match tls {
                Some(acceptor) => {
                    if let Ok(stream) = acceptor.accept(stream).await {
                        let _ = http.serve_connection(TokioIo::new(stream), svc).with_upgrades().await;
                    }
                }
                None => {
                    let _ = http.serve_connection(TokioIo::new(stream), svc).with_upgrades().await;
                }
            }
        });
    }
}
