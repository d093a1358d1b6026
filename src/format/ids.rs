//! Names from data that become parts of output paths. A run id or page name is used as a
//! folder name verbatim, so it must not be able to leave the output folder; every other
//! name (models, hardware, engines) goes through `units::slugify`.

use anyhow::{bail, Result};

/// The longest run id or page name: used as a folder name as it is, never shortened.
pub const MAX_ID_BYTES: usize = 128;

/// Accepts `[A-Za-z0-9][A-Za-z0-9._-]*`, at most [`MAX_ID_BYTES`] bytes: no separators, no `..`, no
/// leading dot (hidden files), nothing a browser or a shell would treat specially.
pub fn check_id(kind: &str, id: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let first_ok = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if id.len() > MAX_ID_BYTES {
        bail!(
            "invalid {kind}: {} bytes long, at most {MAX_ID_BYTES} (it becomes a folder name under the output)",
            id.len()
        );
    }
    if id.is_empty() || !first_ok || !id.chars().all(ok_char) || id.contains("..") {
        bail!(
            "invalid {kind} {id:?}: use letters, digits, '.', '_' and '-' only, starting with a letter or digit (it becomes a folder name under the output)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_that_could_escape_are_refused() {
        for bad in ["", "..", "../x", "a/b", "a\\b", ".hidden", "a..b", "-x", "a b", "é"] {
            assert!(check_id("run id", bad).is_err(), "{bad:?} accepted");
        }
        for good in ["run-1", "step-3.5-flash_vllm", "A1"] {
            check_id("run id", good).unwrap();
        }
        check_id("run id", &"a".repeat(MAX_ID_BYTES)).unwrap();
        let long = check_id("run id", &"a".repeat(MAX_ID_BYTES + 1)).unwrap_err().to_string();
        assert_eq!(long, "invalid run id: 129 bytes long, at most 128 (it becomes a folder name under the output)");
    }
}
