use std::process::ExitCode;

use clap::Parser;

mod cli;
mod cmd;
#[cfg(feature = "simulator")]
mod sim;

use cli::{Cli, Command};

/// A build makes and drops millions of small strings and vectors on every core: with glibc's
/// allocator a third of a `site serve` rebuild at 10,000 runs was malloc and free (jemalloc:
/// 120-140 ms a rebuild against 240 ms, peak memory of a cold build 428 against 407 MiB).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(
        cli.command,
        Command::Build(_)
            | Command::Check(_)
            | Command::Diff(_)
            | Command::Export(_)
            | Command::Repack(_)
            | Command::Import(_)
            | Command::Completions(_)
            | Command::Man(_)
    ) {
        // These commands only print: a closed stdout (`site check | head -0`) ends them
        // quietly, as it ends any Unix filter. `serve` and `bench` keep Rust's default
        // (SIGPIPE ignored) so a client hanging up never kills them.
        // SAFETY: set before any thread starts; SIG_DFL is always a valid handler.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    let result = match &cli.command {
        Command::Build(args) => cmd::build::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Export(args) => cmd::export::run(args),
        Command::Repack(args) => cmd::repack::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Init(args) => cmd::init::run(args),
        Command::Completions(args) => cmd::manual::completions(args),
        Command::Man(args) => cmd::manual::man(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        #[cfg(feature = "simulator")]
        Command::SimulateEngine(args) => cmd::simulate::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The cause chain once, outermost first.
            // Messages carry data (model ids, server replies, file names): no control
            // character reaches the terminal raw.
            eprintln!("{}", cmd::error_lines(&e));
            ExitCode::FAILURE
        }
    }
}
