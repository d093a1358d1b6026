//! One function per subcommand; each is thin over the library.

pub mod bench;
pub mod build;
pub mod check;
pub mod diff;
pub mod import;
pub mod init;
pub mod manual;
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
