//! Serving files from the output folder: URL path decoding, refusal of anything that would
//! leave the folder (`..`, encoded variants, NUL, symlinks pointing out), `index.html` for
//! folders, content types, and the site's 404 page.

use std::path::{Component, Path, PathBuf};

/// The content type for a file name's extension.
pub fn content_type(path: &Path) -> &'static str {
    match path.extension().and_then(|e| e.to_str()).map(|e| e.to_ascii_lowercase()).as_deref() {
        Some("html") | Some("htm") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("json") => "application/json",
        Some("csv") => "text/csv; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("jpg") | Some("jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("ico") => "image/x-icon",
        Some("txt") | Some("md") => "text/plain; charset=utf-8",
        Some("xml") => "application/xml",
        Some("woff2") => "font/woff2",
        Some("woff") => "font/woff",
        Some("pdf") => "application/pdf",
        Some("gz") => "application/gzip",
        _ => "application/octet-stream",
    }
}

/// Percent-decodes a URL path. `None` for malformed escapes, encoded separators or NUL,
/// and non-UTF-8 results: such a path names no file of ours.
pub fn decode_path(raw: &str) -> Option<String> {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = raw.get(i + 1..i + 3)?;
            let b = u8::from_str_radix(hex, 16).ok()?;
            if b == b'/' || b == b'\\' || b == 0 {
                return None;
            }
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).ok()?;
    if s.contains('\\') || s.contains('\0') {
        return None;
    }
    Some(s)
}

/// Percent-encodes what a path segment may not hold as is.
fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub enum Resolved {
    File(PathBuf),
    /// A folder asked for without its trailing slash: redirect so relative links work.
    Redirect(String),
    NotFound,
    /// The path tried to leave the output folder.
    Forbidden,
}

/// Maps a request path (before `?`) to a file under `root`.
pub fn resolve(root: &Path, raw_path: &str) -> Resolved {
    let Some(path) = decode_path(raw_path) else { return Resolved::Forbidden };
    if !path.starts_with('/') {
        return Resolved::Forbidden;
    }
    let mut rel = PathBuf::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return Resolved::Forbidden,
            p => {
                if Path::new(p).components().any(|c| !matches!(c, Component::Normal(_))) {
                    return Resolved::Forbidden;
                }
                rel.push(p);
            }
        }
    }
    let Ok(root) = root.canonicalize() else { return Resolved::NotFound };
    let mut candidate = root.join(&rel);
    if candidate.is_dir() {
        if !path.ends_with('/') {
            // Built from the clean parts, never from the raw path: `//host` would send the
            // browser to another site.
            let parts: Vec<String> = rel.iter().map(|p| p.to_string_lossy().into_owned()).collect();
            return Resolved::Redirect(format!(
                "/{}/",
                parts.iter().map(|p| encode_segment(p)).collect::<Vec<_>>().join("/")
            ));
        }
        candidate.push("index.html");
    }
    // Symlinks are followed only while they stay inside the output folder.
    match candidate.canonicalize() {
        Ok(real) if real.starts_with(&root) && real.is_file() => Resolved::File(real),
        Ok(real) if !real.starts_with(&root) => Resolved::Forbidden,
        _ => Resolved::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding_refuses_encoded_separators() {
        assert_eq!(decode_path("/a%20b").as_deref(), Some("/a b"));
        assert_eq!(decode_path("/%2e%2e/x").as_deref(), Some("/../x"));
        assert!(decode_path("/a%2fb").is_none());
        assert!(decode_path("/a%5cb").is_none());
        assert!(decode_path("/a%00").is_none());
        assert!(decode_path("/a%zz").is_none());
        assert!(decode_path("/a%c3").is_none());
    }

    #[test]
    fn resolution_stays_inside() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("public");
        std::fs::create_dir_all(root.join("runs/a")).unwrap();
        std::fs::write(root.join("runs/a/index.html"), "x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), root.join("link.txt")).unwrap();
        assert!(matches!(resolve(&root, "/runs/a/"), Resolved::File(_)));
        assert!(matches!(resolve(&root, "/runs/a"), Resolved::Redirect(r) if r == "/runs/a/"));
        // Never a protocol-relative redirect off the site.
        for p in ["//runs", "//runs/a", "///runs/./a"] {
            assert!(
                matches!(resolve(&root, p), Resolved::Redirect(r) if r.starts_with("/runs") && !r.starts_with("//")),
                "{p}"
            );
        }
        for bad in [
            "/../secret.txt",
            "/%2e%2e/secret.txt",
            "/runs/%2e%2e/%2e%2e/secret.txt",
            "/link.txt",
            "/runs%2f..%2fsecret.txt",
        ] {
            assert!(matches!(resolve(&root, bad), Resolved::Forbidden), "{bad}");
        }
        assert!(matches!(resolve(&root, "/nope.html"), Resolved::NotFound));
    }
}
