//! `topo`: how the GPUs of a machine are wired, what NCCL made of it, and
//! whether the wires carry what they should.

mod cli;
mod examples;
mod output;
mod sources;
mod views;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli::run(cli) {
        Ok(code) => code,
        Err(error) => {
            if output::is_broken_pipe(&error) {
                // `topo show | head`: the reader left; that is not a failure.
                return ExitCode::SUCCESS;
            }
            eprintln!("topo: error: {error:#}");
            ExitCode::from(2)
        }
    }
}
