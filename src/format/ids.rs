//! Names from data that become parts of output paths. A run id or page name is used as a
//! folder name verbatim, so it must not be able to leave the output folder; every other
//! name (models, hardware, engines) goes through `units::slugify`.

use anyhow::{bail, Result};

/// Accepts `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 128 bytes: no separators, no `..`, no
/// leading dot (hidden files), nothing a browser or a shell would treat specially.
pub fn check_id(kind: &str, id: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let first_ok = id.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
    if id.is_empty() || id.len() > 128 || !first_ok || !id.chars().all(ok_char) || id.contains("..") {
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
    }
}
