//! A small HTTP/1.1 client over hyper: one connection per request, so a cancelled stream
//! closes its connection and the server frees the request at once. Plain `http://` only.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::redact::Scrubber;

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub host: String,
    pub port: u16,
    /// Path prefix before `/v1/...`, without a trailing slash (usually empty).
    pub base_path: String,
}

impl Endpoint {
    /// `http://127.0.0.1:8000`, `http://host:8000/prefix`, `http://host:8000/v1` (the `/v1`
    /// is dropped: paths are added per request).
    pub fn parse(url: &str) -> Result<Endpoint> {
        if url.starts_with("https://") {
            bail!("{url}: https endpoints are not supported; reach the server over plain http (e.g. through an SSH tunnel)");
        }
        let rest = url.strip_prefix("http://").ok_or_else(|| anyhow!("{url}: the endpoint must start with http://"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                (h.to_string(), p.parse::<u16>().map_err(|_| anyhow!("{url}: bad port {p:?}"))?)
            }
            _ => (authority.to_string(), 80),
        };
        if host.is_empty() {
            bail!("{url}: no host");
        }
        let mut base_path = path.trim_end_matches('/').to_string();
        if base_path.ends_with("/v1") {
            base_path.truncate(base_path.len() - 3);
        }
        Ok(Endpoint { host, port, base_path })
    }

    pub fn display(&self) -> String {
        format!("http://{}:{}{}", self.host, self.port, self.base_path)
    }
}

/// The server could not be reached at all (no connection): the server is down, not the cell.
#[derive(Debug)]
pub struct Unreachable(pub String);

impl std::fmt::Display for Unreachable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unreachable {}

/// The most of a whole response (discovery, metrics, tokenize) that is read.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

#[derive(Clone)]
pub struct HttpClient {
    pub endpoint: Endpoint,
    /// Sent as `Authorization: Bearer`; never logged or written.
    api_key: Option<String>,
    /// Removes `api_key` (built once: every failure message goes through it).
    scrubber: Scrubber,
    pub connect_timeout: Duration,
}

impl HttpClient {
    pub fn new(endpoint: Endpoint, api_key: Option<String>) -> HttpClient {
        let scrubber = Scrubber::new(api_key.clone());
        HttpClient { endpoint, api_key, scrubber, connect_timeout: Duration::from_secs(10) }
    }

    /// What removes this client's secrets from text before it is stored or printed.
    pub fn scrubber(&self) -> Scrubber {
        self.scrubber.clone()
    }

    /// `text` without this client's secrets (a server may echo the key it was sent).
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub(text)
    }

    fn build(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<Request<Full<Bytes>>> {
        let uri = format!("{}{}", self.endpoint.base_path, path);
        let mut b = Request::builder()
            .method(method)
            .uri(uri)
            .header(hyper::header::HOST, format!("{}:{}", self.endpoint.host, self.endpoint.port))
            .header(hyper::header::USER_AGENT, concat!("speed-matrix/", env!("CARGO_PKG_VERSION")));
        if let Some(key) = &self.api_key {
            b = b.header(hyper::header::AUTHORIZATION, format!("Bearer {key}"));
        }
        if body.is_some() {
            b = b.header(hyper::header::CONTENT_TYPE, "application/json");
        }
        Ok(b.body(Full::new(body.unwrap_or_default()))?)
    }

    /// Sends a request on a fresh connection and returns the response head and body stream.
    pub async fn send(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<(StatusCode, Incoming)> {
        let addr = (self.endpoint.host.as_str(), self.endpoint.port);
        let unreachable =
            |why: String| anyhow::Error::new(Unreachable(format!("connecting to {}: {why}", self.endpoint.display())));
        let stream = tokio::time::timeout(self.connect_timeout, TcpStream::connect(addr))
            .await
            .map_err(|_| unreachable("timed out".into()))?
            .map_err(|e| unreachable(e.to_string()))?;
        let _ = stream.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(async move {
            // Ends when the response body is dropped or the server closes.
            let _ = conn.await;
        });
        let req = self.build(method, path, body)?;
        let resp = sender.send_request(req).await.with_context(|| format!("{} {path}", self.endpoint.display()))?;
        Ok((resp.status(), resp.into_body()))
    }

    /// A whole response (for small JSON and metrics bodies).
    pub async fn fetch(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        timeout: Duration,
    ) -> Result<(StatusCode, Bytes)> {
        let fut = async {
            let (status, body) = self.send(method, path, body).await?;
            let bytes = http_body_util::Limited::new(body, MAX_BODY_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    anyhow!("{path}: reading the response body: {e} (at most {MAX_BODY_BYTES} bytes are read)")
                })?
                .to_bytes();
            Ok::<_, anyhow::Error>((status, bytes))
        };
        tokio::time::timeout(timeout, fut).await.map_err(|_| anyhow!("{path}: no answer within {timeout:?}"))?
    }

    pub async fn get(&self, path: &str) -> Result<(StatusCode, Bytes)> {
        self.fetch(Method::GET, path, None, Duration::from_secs(10)).await
    }

    pub async fn post(&self, path: &str, json: &serde_json::Value) -> Result<(StatusCode, Bytes)> {
        self.fetch(Method::POST, path, Some(Bytes::from(serde_json::to_vec(json)?)), Duration::from_secs(600)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        let e = Endpoint::parse("http://127.0.0.1:8000").unwrap();
        assert_eq!((e.host.as_str(), e.port, e.base_path.as_str()), ("127.0.0.1", 8000, ""));
        let e = Endpoint::parse("http://gpu-box:30000/v1/").unwrap();
        assert_eq!((e.port, e.base_path.as_str()), (30000, ""));
        let e = Endpoint::parse("http://h/proxy/v1").unwrap();
        assert_eq!((e.port, e.base_path.as_str()), (80, "/proxy"));
        assert!(Endpoint::parse("https://h").is_err());
        assert!(Endpoint::parse("h:80").is_err());
    }
}
