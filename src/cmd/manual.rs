//! `site completions SHELL` and `site man [SUBCOMMAND]`: what packagers and users put in
//! their shell's completion folder and in `man`'s path, made from the same clap definitions
//! as the parser, so they never drift from the flags.

use anyhow::{bail, Context, Result};
use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};

pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut cmd = without_hidden_commands(Cli::command());
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "site", &mut script);
    super::write_stdout(&script).context("writing the completion script")
}

pub fn man(args: &ManArgs) -> Result<()> {
    let cmd = Cli::command();
    let page = match &args.subcommand {
        None => cmd,
        Some(name) => match cmd.find_subcommand(name).filter(|c| !c.is_hide_set()) {
            // A subcommand's page is named `site-NAME`, as git's and cargo's are.
            // The version names the page; the subcommand itself takes no `--version`.
            Some(sub) => sub
                .clone()
                .name(format!("site-{name}"))
                .version(speed_matrix::units::BUILD_VERSION)
                .disable_version_flag(true),
            None => {
                let known: Vec<String> =
                    cmd.get_subcommands().filter(|c| !c.is_hide_set()).map(|c| c.get_name().to_string()).collect();
                bail!("no subcommand {name:?}; the pages are: {}", known.join(", "))
            }
        },
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page).render(&mut roff).context("writing the manual page")?;
    super::write_stdout(&roff).context("writing the manual page")
}

/// The command line as completions offer it: hidden subcommands (the test-only simulated
/// engine) left out, which the generators would otherwise offer.
fn without_hidden_commands(cmd: clap::Command) -> clap::Command {
    let visible: Vec<clap::Command> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned().collect();
    let hidden: Vec<String> =
        cmd.get_subcommands().filter(|s| s.is_hide_set()).map(|s| s.get_name().to_string()).collect();
    if hidden.is_empty() {
        return cmd;
    }
    let mut out = clap::Command::new(cmd.get_name().to_string())
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .subcommands(visible)
        .subcommand_required(cmd.is_subcommand_required_set());
    if let Some(v) = cmd.get_version() {
        out = out.version(v.to_string());
    }
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    out
}
