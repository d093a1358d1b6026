//! A small HTTP/1.1 client over hyper: one connection per request, so a cancelled stream
//! closes its connection and the server frees the request at once; `http://` or `https://`
//! (rustls, `tls`). Secrets (the API key, extra headers from the environment) are sent and
//! never shown: every failure message passes the client's scrubber.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

use crate::redact::Scrubber;

#[derive(Debug, Clone)]
pub struct Endpoint {
    /// `https://`.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    /// Path prefix before `/v1/...`, without a trailing slash (usually empty).
    pub base_path: String,
}

impl Endpoint {
    /// Whether `other` is an address of this server: the same port and path on the same
    /// host, loopback names (`localhost`, `127.0.0.1`, `[::1]`) counted as one host, names
    /// resolved where they resolve.
    pub fn same_server(&self, other: &Endpoint) -> bool {
        use std::net::ToSocketAddrs as _;
        if self.port != other.port || self.base_path != other.base_path {
            return false;
        }
        let host = |e: &Endpoint| e.host.trim_matches(['[', ']']).to_ascii_lowercase();
        if host(self) == host(other) || (self.is_loopback() && other.is_loopback()) {
            return true;
        }
        let resolved = |e: &Endpoint| -> Vec<std::net::IpAddr> {
            (host(e).as_str(), e.port).to_socket_addrs().map(|v| v.map(|s| s.ip()).collect()).unwrap_or_default()
        };
        let (ra, rb) = (resolved(self), resolved(other));
        ra.iter().any(|ip| rb.contains(ip) && !ip.is_unspecified())
    }

    /// `http://127.0.0.1:8000`, `https://gateway/openai/v1`, `http://host:8000/prefix`
    /// (a trailing `/v1` is dropped: paths are added per request).
    /// Errors never repeat the URL or any part of it that may hold a secret (user info, a
    /// query, a fragment): they say which part is wrong.
    pub fn parse(url: &str) -> Result<Endpoint> {
        let (tls, rest) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (false, rest),
            (None, Some(rest)) => (true, rest),
            (None, None) => bail!("--endpoint: expected an address starting with http:// or https://"),
        };
        if rest.contains(['?', '#']) {
            bail!("--endpoint: the address has a query or fragment (after ? or #), which is neither sent nor shown (it can hold a key); give the server's address only, and the key in OPENAI_API_KEY (or --api-key-env) or a header in --header-env");
        }
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if authority.contains('@') {
            bail!("--endpoint: credentials in the address (user:password@) are neither sent nor shown; put the key in OPENAI_API_KEY (or --api-key-env) or a header in --header-env");
        }
        if authority.chars().any(|c| c.is_control() || c.is_whitespace()) {
            bail!("--endpoint: the host holds spaces or control characters");
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => {
                let port = p.parse::<u16>().ok().filter(|p| *p > 0);
                (
                    h.to_string(),
                    port.ok_or_else(|| anyhow!("--endpoint: bad port (expected a number from 1 to 65535)"))?,
                )
            }
            _ => (authority.to_string(), if tls { 443 } else { 80 }),
        };
        if host.is_empty() {
            bail!("--endpoint: no host");
        }
        let mut base_path = path.trim_end_matches('/').to_string();
        if base_path.ends_with("/v1") {
            base_path.truncate(base_path.len() - 3);
        }
        Ok(Endpoint { tls, host, port, base_path })
    }

    pub fn display(&self) -> String {
        format!("{}://{}:{}{}", if self.tls { "https" } else { "http" }, self.host, self.port, self.base_path)
    }

    /// A server on this machine (loopback): its hardware is this machine's.
    pub fn is_loopback(&self) -> bool {
        let host = self.host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
    }
}

/// An HTTP/1.1 connection over `io`; the connection task ends when the response body is
/// dropped or the server closes.
async fn handshake<S>(io: S) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
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

/// What the client sends that must never be shown or stored.
#[derive(Clone, Default)]
pub struct Credentials {
    /// Sent as `Authorization: Bearer`.
    pub api_key: Option<String>,
    /// Extra headers (`--header-env`): name and value.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        write!(
            f,
            "Credentials {{ api_key: {}, headers: {names:?} }}",
            if self.api_key.is_some() { "<set>" } else { "none" }
        )
    }
}

impl Credentials {
    /// Every secret value, for the scrubber.
    pub fn secrets(&self) -> Vec<String> {
        let headers = self.headers.iter().filter_map(|(_, v)| v.to_str().ok().map(str::to_string));
        self.api_key.iter().cloned().chain(headers).collect()
    }
}

/// Headers a user may not set: the client owns them, or they would break the exchange.
const RESERVED_HEADERS: &[&str] =
    &["host", "content-length", "content-type", "transfer-encoding", "connection", "upgrade", "te", "trailer"];

/// A `--header-env` variable's value, `Header-Name: value`. `var` names the variable in
/// errors; the value never appears in one.
pub fn parse_header_line(var: &str, line: &str) -> Result<(HeaderName, HeaderValue)> {
    let Some((name, value)) = line.split_once(':') else {
        bail!("--header-env {var}: the variable must hold `Header-Name: value` (no colon found)");
    };
    let name = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| anyhow!("--header-env {var}: the text before the colon is not a header name"))?;
    if RESERVED_HEADERS.contains(&name.as_str()) {
        bail!("--header-env {var}: the header {name} is set by site bench itself and cannot be replaced");
    }
    let mut value = HeaderValue::from_str(value.trim())
        .map_err(|_| anyhow!("--header-env {var}: the value holds characters a header cannot carry"))?;
    value.set_sensitive(true);
    Ok((name, value))
}

#[derive(Clone)]
pub struct HttpClient {
    pub endpoint: Endpoint,
    credentials: Credentials,
    /// Set for an https endpoint.
    tls: Option<tokio_rustls::TlsConnector>,
    /// Removes the credentials (built once: every failure message goes through it).
    scrubber: Scrubber,
    pub connect_timeout: Duration,
}

impl HttpClient {
    /// A client of `endpoint`; an https endpoint needs `tls`.
    pub fn new(
        endpoint: Endpoint,
        credentials: Credentials,
        tls: Option<tokio_rustls::TlsConnector>,
    ) -> Result<HttpClient> {
        if endpoint.tls && tls.is_none() {
            bail!("{}: an https endpoint needs TLS settings", endpoint.display());
        }
        let scrubber = Scrubber::new(credentials.secrets());
        Ok(HttpClient { endpoint, credentials, tls, scrubber, connect_timeout: Duration::from_secs(10) })
    }

    /// What removes this client's secrets from text before it is stored or printed.
    pub fn scrubber(&self) -> Scrubber {
        self.scrubber.clone()
    }

    /// `text` without this client's secrets (a server may echo the key it was sent).
    pub fn scrub(&self, text: &str) -> String {
        self.scrubber.scrub_message(text)
    }

    fn build(&self, method: Method, path: &str, body: Option<Bytes>) -> Result<Request<Full<Bytes>>> {
        let uri = format!("{}{}", self.endpoint.base_path, path);
        let mut b = Request::builder()
            .method(method)
            .uri(uri)
            .header(hyper::header::HOST, format!("{}:{}", self.endpoint.host, self.endpoint.port))
            .header(hyper::header::USER_AGENT, concat!("speed-matrix/", env!("CARGO_PKG_VERSION")));
        if let Some(key) = &self.credentials.api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| anyhow!("the API key holds characters a header cannot carry"))?;
            value.set_sensitive(true);
            b = b.header(hyper::header::AUTHORIZATION, value);
        }
        for (name, value) in &self.credentials.headers {
            b = b.header(name, value);
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
        let mut sender = match &self.tls {
            Some(tls) if self.endpoint.tls => {
                let name = super::tls::server_name(&self.endpoint.host)?;
                // A server that takes the connection and never finishes the handshake must
                // not hang the run.
                let tls_result = tokio::time::timeout(self.connect_timeout, tls.connect(name, stream))
                    .await
                    .map_err(|_| unreachable("the TLS handshake did not finish in time".into()))?;
                let stream = tls_result.map_err(|e| {
                    anyhow!(
                        "TLS handshake with {} failed: {e} (a private CA: --ca-cert FILE; a self-signed test server: --insecure)",
                        self.endpoint.display()
                    )
                })?;
                handshake(stream).await?
            }
            _ => handshake(stream).await?,
        };
        let req = self.build(method, path, body)?;
        let resp = sender.send_request(req).await.with_context(|| format!("{} {path}", self.endpoint.display()))?;
        Ok((resp.status(), resp.into_body()))
    }

    /// The names of the extra headers sent (their values are secrets).
    pub fn header_names(&self) -> Vec<String> {
        self.credentials.headers.iter().map(|(n, _)| n.as_str().to_string()).collect()
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
        let e = Endpoint::parse("https://gateway.example/openai/v1").unwrap();
        assert_eq!((e.tls, e.port, e.base_path.as_str()), (true, 443, "/openai"));
        assert_eq!(e.display(), "https://gateway.example:443/openai");
        assert!(Endpoint::parse("h:80").is_err());
        assert!(Endpoint::parse("https://user:pw@h").is_err());
        // A path may hold an @ (a gateway's route); only user info in the authority is refused.
        assert_eq!(Endpoint::parse("http://h/@team/v1").unwrap().base_path, "/@team");
        assert!(Endpoint::parse("http://127.0.0.1:1").unwrap().is_loopback());
        assert!(Endpoint::parse("http://[::1]:8000").unwrap().is_loopback());
        assert!(Endpoint::parse("http://localhost").unwrap().is_loopback());
        assert!(!Endpoint::parse("http://10.0.0.2").unwrap().is_loopback());
    }

    #[test]
    fn endpoint_errors_never_repeat_a_secret() {
        for url in [
            "http://host:8000?api_key=sk-SECRETVALUE123",
            "http://host:8000/v1?api_key=sk-SECRETVALUE123",
            "http://host:8000/#sk-SECRETVALUE123",
            "http://user:sk-SECRETVALUE123@host:8000",
            "https://sk-SECRETVALUE123@host",
            "http://host:sk-SECRETVALUE123",
            "ftp://sk-SECRETVALUE123@host",
            "http://host\tsk-SECRETVALUE123:80",
        ] {
            let e = format!("{:#}", Endpoint::parse(url).unwrap_err());
            assert!(!e.contains("SECRETVALUE"), "{url} -> {e}");
            assert!(e.starts_with("--endpoint: "), "{e}");
        }
    }

    #[test]
    fn header_lines_are_parsed_and_their_values_never_shown() {
        let (n, v) = parse_header_line("TENANT", "X-Tenant:  team-7 ").unwrap();
        assert_eq!((n.as_str(), v.to_str().unwrap()), ("x-tenant", "team-7"));
        assert!(v.is_sensitive());
        for (line, why) in [
            ("no colon secret-1", "no colon found"),
            ("Host: evil", "set by site bench itself"),
            ("bad name: secret-1", "not a header name"),
            ("X-Key: secret-1\u{7}", "characters a header cannot carry"),
        ] {
            let e = parse_header_line("V", line).unwrap_err().to_string();
            assert!(e.contains(why) && !e.contains("secret-1"), "{line:?}: {e}");
        }
        let creds = Credentials { api_key: Some("k".into()), headers: vec![(n, v)] };
        assert_eq!(creds.secrets(), ["k", "team-7"]);
        assert!(!format!("{creds:?}").contains("team-7"));
    }
}
