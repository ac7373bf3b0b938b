//! The `embscope` binary: the command line of [`embscope::cli`] on this
//! process's arguments, its outcome as the exit code.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(embscope::cli::main(std::env::args_os()))
}
