//! The `topo` command; everything lives in the `topo` library.

use std::process::ExitCode;

use clap::Parser;
use topo::{cli, output};

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            if output::is_broken_pipe(&error) {
                // `topo show | head`: the reader left; that is not a failure.
                return ExitCode::SUCCESS;
            }
            output::error(&format!("{error:#}"));
            ExitCode::from(2)
        }
    }
}
