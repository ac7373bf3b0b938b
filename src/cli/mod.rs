//! The command line, resolved once: clap parses the arguments into
//! [`Cli`], [`resolve()`] turns them into a plain [`resolve::Config`], and
//! [`run()`] carries it out on the library. Nothing outside this folder and
//! `main.rs` sees clap.
//!
//! | file | what it owns |
//! |---|---|
//! | `args.rs` | the clap derive types; each field's `///` is its `--help` |
//! | `values.rs` | value parsers: id lists (`0-5,42`) and counts |
//! | `resolve.rs` | the arguments resolved into plain configuration |
//! | `usage.rs` | one-line parse errors; a MODEL given after its queries |
//! | `pages.rs` | the man page and the completion scripts |
//! | `run.rs` | a configuration carried out: open, call the command, print |

mod args;
mod pages;
mod resolve;
mod run;
mod usage;
mod values;

pub use args::Cli;
pub use resolve::resolve;
pub use run::{Stop, run};
pub use usage::one_line;
