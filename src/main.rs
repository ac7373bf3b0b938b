//! The `embscope` binary: parse the command line, resolve it, run it, print
//! what stopped it as one `embscope: …` line on stderr, and map the outcome
//! to an exit code (0 ok, 1 `check` findings at or above `--fail-on`, 2 bad
//! usage or bad input; a broken pipe is 0).

mod cli;

use std::io;
use std::process::ExitCode;

use clap::Parser;

use cli::{Cli, Stop};

fn main() -> ExitCode {
    let outcome = match Cli::try_parse() {
        Ok(args) => cli::resolve(args)
            .map_err(Stop::from)
            .and_then(|config| cli::run(&config)),
        Err(e) => return parse_error(&e),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Stop::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Stop::Output(e)) => {
            eprintln!("embscope: cannot write output: {e}");
            ExitCode::from(2)
        }
        Err(Stop::Error(e)) => {
            eprintln!("embscope: {e}");
            ExitCode::from(2)
        }
    }
}

/// A command line clap refused: one line and exit code 2, or help and
/// version as clap prints them, with clap's exit code.
fn parse_error(e: &clap::Error) -> ExitCode {
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match cli::one_line(e, &args) {
        Some(line) => {
            eprintln!("embscope: {line}");
            ExitCode::from(2)
        }
        None => {
            let _ = e.print();
            ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
        }
    }
}
