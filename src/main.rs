use std::process::ExitCode;

use clap::Parser;
use speed_matrix::cli::{Cli, Command};
use speed_matrix::cmd;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Build(args) => cmd::build::run(args),
        Command::Check(args) => cmd::check::run(args),
        Command::Diff(args) => cmd::diff::run(args),
        Command::Import(args) => cmd::import::run(args),
        Command::Serve(args) => cmd::serve::run(args),
        Command::Bench(args) => cmd::bench::run(args),
        Command::SimulateEngine(args) => cmd::simulate::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // The cause chain once, outermost first.
            eprintln!("error: {e}");
            for cause in e.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}
