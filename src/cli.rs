//! Command-line definitions (clap). Each subcommand maps to one function in `cmd`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "site",
    version,
    about = "Measure LLM inference servers and publish the results as a static site"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Build the static site from the data folder.
    Build(BuildArgs),
    /// Load and validate the data folder without writing anything.
    Check(CheckArgs),
}

#[derive(Debug, Args, Clone)]
pub struct SiteArgs {
    /// Data folder (runs/, pages/).
    #[arg(long, default_value = "data")]
    pub data: PathBuf,
    /// Template overrides; files missing there use the built-in defaults.
    #[arg(long, default_value = "site-templates")]
    pub templates: PathBuf,
    /// Static asset overrides and extra assets.
    #[arg(long = "static", default_value = "static")]
    pub static_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct BuildArgs {
    #[command(flatten)]
    pub site: SiteArgs,
    /// Output folder; replaced whole, and only when the build succeeded.
    #[arg(long, default_value = "public")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub site: SiteArgs,
}
