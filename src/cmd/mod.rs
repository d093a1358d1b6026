//! One function per subcommand; each is thin over the library.

/// `println!` that returns a write error (a full disk, a closed pipe's EBADF) as a one-line
/// error instead of panicking.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        writeln!(std::io::stdout().lock(), $($arg)*).map_err(crate::cmd::stdout_error)?
    }};
}

pub mod bench;
pub mod build;
pub mod check;
pub mod diff;
pub mod export;
pub mod import;
pub mod init;
pub mod manual;
pub mod repack;
pub mod serve;
#[cfg(feature = "simulator")]
pub mod simulate;

use crate::cli::SiteArgs;
use speed_matrix::site::SiteConfig;

impl SiteArgs {
    /// The site's layout with its output folder checked against the data folder (links
    /// followed, never inside or holding the data).
    pub fn config_writing(&self, out: &std::path::Path) -> anyhow::Result<SiteConfig> {
        Ok(self.config(speed_matrix::fsutil::output_folder(out, &self.data)?))
    }

    pub fn config(&self, out: std::path::PathBuf) -> SiteConfig {
        SiteConfig {
            data_dir: self.data.clone(),
            out_dir: out,
            templates_dir: Some(self.templates.clone()),
            static_dir: Some(self.static_dir.clone()),
            settings_file: Some(self.config.clone()),
        }
    }
}

/// A failed write to standard output, as the error `main` prints.
pub fn stdout_error(e: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("writing to standard output: {e}")
}

/// Refuses to run when standard output is closed (`site completions bash >&-`): the output is
/// the command's whole purpose. Rust's runtime opens `/dev/null` read-write in place of a
/// closed standard descriptor, so such a descriptor is the sign; `> /dev/null` opens it
/// write-only and is left alone.
pub fn require_stdout() -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: F_GETFL on a descriptor number only reads the descriptor's flags.
    let flags = unsafe { libc::fcntl(1, libc::F_GETFL) };
    let null = std::fs::metadata("/dev/null").map(|m| m.rdev()).ok();
    let stdout_dev = std::fs::metadata("/proc/self/fd/1").map(|m| m.rdev()).ok();
    let reopened = flags != -1 && flags & libc::O_ACCMODE == libc::O_RDWR && null.is_some() && stdout_dev == null;
    if flags == -1 || reopened {
        anyhow::bail!("standard output is closed: nothing can be written");
    }
    Ok(())
}

/// Writes `bytes` to standard output whole, flushed, a failure an error.
pub fn write_stdout(bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    require_stdout()?;
    let mut out = std::io::stdout().lock();
    out.write_all(bytes).and_then(|()| out.flush()).map_err(stdout_error)
}

/// An error's cause chain for the terminal, outermost first, a cause a line (`error: `, then
/// `  caused by: `). Messages carry data (model ids, server replies, file names): a list of
/// problems is printed one a line, each escaped; any other message is escaped whole, so a
/// newline in data never starts a line.
pub fn error_lines(e: &anyhow::Error) -> String {
    use speed_matrix::units::terminal_safe;
    let mut out = Vec::new();
    for (i, cause) in e.chain().enumerate() {
        let lead = if i == 0 { "error: " } else { "  caused by: " };
        let text = match cause.downcast_ref::<speed_matrix::format::load::ProblemList>() {
            Some(list) => std::iter::once(terminal_safe(&list.heading).into_owned())
                .chain(list.problems.iter().map(|p| format!("  {}", terminal_safe(p))))
                .collect::<Vec<_>>()
                .join("\n"),
            None => terminal_safe(&cause.to_string()).into_owned(),
        };
        out.push(format!("{lead}{text}"));
    }
    out.join("\n")
}
