//! The command line, resolved once: clap parses the arguments into
//! [`Cli`], [`resolve()`] turns them into a plain `Config`, and
//! [`run()`] carries it out on the library; [`main`] is all of it, for the
//! binary. Nothing below the command line (commands, rendering, opening)
//! sees clap; [`crate::usage`] holds the conventions it builds on.
//!
//! | file | what it owns |
//! |---|---|
//! | `args.rs` | the clap derive types; each field's `///` is its `--help` |
//! | `resolve.rs` | the arguments resolved into plain configuration |
//! | `pages.rs` | the man page and the completion scripts |
//! | `run.rs` | a configuration carried out: open, call the command, print |

mod args;
mod pages;
mod resolve;
mod run;

use std::ffi::OsString;
use std::io;

use clap::{CommandFactory, Parser};

pub use args::Cli;
pub use resolve::resolve;
pub use run::{Stop, run};

/// Runs embscope on `args` (the program name first, as `std::env::args_os`
/// gives them): parse, resolve, run, print what stopped it as one
/// `embscope: …` line on stderr. Returns the exit code: 0 ok, 1 `check`
/// findings at or above `--fail-on`, 2 bad usage or bad input; a broken
/// pipe is 0.
pub fn main(args: impl IntoIterator<Item = OsString>) -> u8 {
    let args: Vec<OsString> = args.into_iter().collect();
    let outcome = match Cli::try_parse_from(&args) {
        Ok(parsed) => resolve(parsed)
            .map_err(Stop::from)
            .and_then(|config| run(&config)),
        Err(e) => return parse_error(&e, &args),
    };
    match outcome {
        Ok(code) => code,
        Err(Stop::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => 0,
        Err(Stop::Output(e)) => {
            eprintln!("embscope: cannot write output: {e}");
            2
        }
        Err(Stop::Error(e)) => {
            eprintln!("embscope: {e}");
            2
        }
    }
}

/// A command line clap refused: one line and exit code 2, or help and
/// version as clap prints them, with clap's exit code.
fn parse_error(e: &clap::Error, args: &[OsString]) -> u8 {
    let rest: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match crate::usage::one_line(e, &Cli::command(), &rest) {
        Some(line) => {
            eprintln!("embscope: {}", with_tip(line, e, &rest));
            2
        }
        None => {
            let _ = e.print();
            u8::try_from(e.exit_code()).unwrap_or(2)
        }
    }
}

/// `line` with what to write instead, where a word of the command line
/// was taken for something the command has not: `lookup MODEL '#5'`
/// names rows as `neighbors` does its queries, but `lookup` takes them
/// with options.
fn with_tip(line: String, e: &clap::Error, args: &[String]) -> String {
    let stray = e
        .get(clap::error::ContextKind::InvalidArg)
        .map(ToString::to_string)
        .filter(|a| !a.starts_with('-'));
    let lookup = args.iter().any(|a| a == "lookup");
    match stray {
        Some(a) if lookup && e.kind() == clap::error::ErrorKind::UnknownArgument => {
            let id = a.strip_prefix('#').unwrap_or(&a);
            let instead = match id.parse::<u64>() {
                Ok(id) => format!("--id {id}"),
                Err(_) => format!("--token '{a}'"),
            };
            format!(
                "{line}; lookup names rows with --id, --token or --text: `embscope lookup MODEL {instead}`"
            )
        }
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::usage::one_line;

    fn error_of(args: &[&str]) -> String {
        let err = Cli::try_parse_from(args).expect_err("parse fails");
        let rest: Vec<String> = args[1..].iter().map(|a| a.to_string()).collect();
        one_line(&err, &Cli::command(), &rest).expect("an error, not help")
    }

    #[test]
    fn parse_errors_are_one_line_with_the_command() {
        let e = error_of(&["embscope", "lookup", "m", "--id", "-1"]);
        assert_eq!(
            e,
            "invalid value '-1' for '--id <N>...': ids are non-negative integers, not `-1` (see `embscope lookup --help`)"
        );
        let e = error_of(&["embscope", "info"]);
        assert!(
            e.starts_with("the following required arguments were not provided: <MODEL>"),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = error_of(&["embscope", "lookup", "m", "--id", "1", "--fulll"]);
        assert!(e.contains("'--full'"), "{e}");
    }

    #[test]
    fn a_lookup_query_after_model_is_shown_as_an_option() {
        let tip = |args: &[&str]| {
            let err = Cli::try_parse_from(args).expect_err("parse fails");
            let rest: Vec<String> = args[1..].iter().map(|a| a.to_string()).collect();
            with_tip(one_line(&err, &Cli::command(), &rest).unwrap(), &err, &rest)
        };
        let e = tip(&["embscope", "lookup", "m", "#5"]);
        assert!(e.ends_with("`embscope lookup MODEL --id 5`"), "{e}");
        let e = tip(&["embscope", "lookup", "m", "king"]);
        assert!(e.ends_with("`embscope lookup MODEL --token 'king'`"), "{e}");
        let e = tip(&["embscope", "lookup", "m", "--id", "1", "--fulll"]);
        assert!(!e.contains("names rows"), "{e}");
    }

    #[test]
    fn help_and_version_are_not_errors() {
        for args in [["embscope", "--help"], ["embscope", "--version"]] {
            let err = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(one_line(&err, &Cli::command(), &[]), None);
        }
    }
}
