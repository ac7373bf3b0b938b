//! What `embscope man` and `embscope completions` print, both made from
//! the clap definitions so they cannot drift from the parser.

use std::io;

use clap::CommandFactory;
use clap_mangen::Man;

use super::args::Cli;

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "embscope", &mut out);
    out
}

/// The man page, as roff.
pub fn man_page() -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    Man::new(Cli::command()).render(&mut out)?;
    Ok(out)
}
