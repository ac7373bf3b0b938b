//! The `embscope` binary: the command line of [`embscope::cli`] on this
//! process's arguments, its outcome as the exit code.

use std::process::ExitCode;

/// Bounds what a chat template's render may allocate (see the module).
#[global_allocator]
static ALLOC: embscope::alloc_budget::Budgeted = embscope::alloc_budget::Budgeted;

fn main() -> ExitCode {
    ExitCode::from(embscope::cli::main(std::env::args_os()))
}
