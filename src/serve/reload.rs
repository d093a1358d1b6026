//! Live reload. Every HTML page `site serve` answers ends with a small script that opens a
//! WebSocket to `/__build`; the server sends the number of the last finished build when the
//! socket opens and again after every build, and the page reloads when that number is not
//! the build it was served in. Pushed, not polled: a page polling once a second reloaded
//! half a second after its rebuild on average, longer than the rebuild itself takes.
//! A plain `GET /__build` answers the same number as text (for scripts and tests).

use bytes::Bytes;
use futures_util::{SinkExt as _, StreamExt as _};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_tungstenite::tungstenite::protocol::WebSocketConfig;
use hyper_tungstenite::tungstenite::Message;
use hyper_tungstenite::HyperWebsocket;
use tokio::sync::watch;

/// Where pages ask for the build number.
pub const PATH: &str = "/__build";

/// The builds finished so far, shared by the build thread and every open page.
pub struct Builds {
    last: watch::Sender<u64>,
}

impl Default for Builds {
    fn default() -> Self {
        Self { last: watch::Sender::new(1) }
    }
}

impl Builds {
    pub fn last(&self) -> u64 {
        *self.last.borrow()
    }

    /// A build finished: every open page hears of it now.
    pub fn finished(&self) {
        self.last.send_modify(|n| *n += 1);
    }

    /// Answers a WebSocket upgrade of `PATH`; the socket is served on a task of its own. A
    /// request that is not a valid upgrade gets `None` (and the plain answer).
    pub fn upgrade(&self, req: &mut Request<Incoming>) -> Option<Response<Full<Bytes>>> {
        if !hyper_tungstenite::is_upgrade_request(req) {
            return None;
        }
        let header = |name: hyper::header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
        if !origin_allowed(header(hyper::header::ORIGIN), header(hyper::header::HOST)) {
            // Another site's page must not learn when this one rebuilds (or hold sockets open).
            let body = Full::new(Bytes::from_static(b"this origin may not listen to the site's builds\n"));
            return Some(
                Response::builder().status(hyper::StatusCode::FORBIDDEN).body(body).expect("a fixed response"),
            );
        }
        // Pages send nothing but a close: a tiny limit keeps a misbehaving client's memory flat.
        let config = WebSocketConfig::default().max_message_size(Some(1024)).max_frame_size(Some(1024));
        let (response, socket) = hyper_tungstenite::upgrade(req, Some(config)).ok()?;
        tokio::spawn(tell_builds(socket, self.last.subscribe()));
        Some(response)
    }
}

/// A WebSocket from a browser carries the page's `Origin`: only the served site's own
/// (`http://` + the `Host` it asked for) may listen. Clients that are not browsers send none.
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>) -> bool {
    match (origin, host) {
        (None, _) => true,
        (Some(origin), Some(host)) => origin.eq_ignore_ascii_case(&format!("http://{host}")),
        (Some(_), None) => false,
    }
}

/// The script appended to a page served while `build` was the last build.
pub fn script(build: u64) -> String {
    format!(
        "<script>(()=>{{const v='{build}';const go=()=>{{const s=new WebSocket((location.protocol==='https:'?'wss://':'ws://')+location.host+'{PATH}');s.onmessage=e=>{{if(e.data!==v)location.reload()}};s.onclose=()=>setTimeout(go,1000)}};go()}})()</script>"
    )
}

/// Sends the last build's number now and after every build, until the page goes away.
async fn tell_builds(socket: HyperWebsocket, mut builds: watch::Receiver<u64>) {
    let Ok(socket) = socket.await else { return };
    let (mut to_page, mut from_page) = socket.split();
    loop {
        let last = *builds.borrow_and_update();
        if to_page.send(Message::text(last.to_string())).await.is_err() {
            return;
        }
        // Reading answers pings (tungstenite does) and notices a close; the page sends nothing else.
        let changed = loop {
            tokio::select! {
                changed = builds.changed() => break changed.is_ok(),
                message = from_page.next() => match message {
                    Some(Ok(Message::Close(_)) | Err(_)) | None => return,
                    Some(Ok(_)) => {}
                },
            }
        };
        if !changed {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_served_origin_may_listen() {
        assert!(origin_allowed(None, Some("127.0.0.1:8000")));
        assert!(origin_allowed(Some("http://127.0.0.1:8000"), Some("127.0.0.1:8000")));
        assert!(origin_allowed(Some("http://LOCALHOST:8000"), Some("localhost:8000")));
        assert!(!origin_allowed(Some("http://evil.example"), Some("127.0.0.1:8000")));
        assert!(!origin_allowed(Some("http://127.0.0.1:8001"), Some("127.0.0.1:8000")));
        assert!(!origin_allowed(Some("null"), Some("127.0.0.1:8000")));
        assert!(!origin_allowed(Some("http://127.0.0.1:8000"), None));
    }

    #[test]
    fn the_script_names_its_build_and_the_endpoint() {
        let s = script(42);
        assert!(s.starts_with("<script>") && s.ends_with("</script>"));
        assert!(s.contains("const v='42'"), "{s}");
        assert!(s.contains("'/__build'"), "{s}");
    }

    #[test]
    fn finished_builds_count_up_for_every_listener() {
        let builds = Builds::default();
        let mut a = builds.last.subscribe();
        assert_eq!(builds.last(), 1);
        builds.finished();
        builds.finished();
        assert_eq!(builds.last(), 3);
        assert!(a.has_changed().unwrap());
        assert_eq!(*a.borrow_and_update(), 3);
    }
}
