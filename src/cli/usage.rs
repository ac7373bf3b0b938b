//! The command line's conventions outside any one command: value parsers
//! with messages that fit, argument errors as one `embscope: …` line, a
//! MODEL given after its queries, completion scripts and the man page.

use std::path::Path;

use clap::CommandFactory;
use clap::error::ErrorKind;

use crate::cli::Cli;

/// Parses a row id: a non-negative integer.
pub fn row_id(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| {
        if s.parse::<i128>().is_ok() {
            "ids are non-negative integers".to_string()
        } else {
            "expected a non-negative integer".to_string()
        }
    })
}

/// Parses a count or size: an integer of at least 1 that fits `T`.
pub fn at_least_one<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => T::try_from(n).map_err(|_| format!("{n} is too large")),
        Err(_) if s.parse::<i128>().is_ok() => Err("must be at least 1".into()),
        Err(_) => Err("expected a positive integer".into()),
    }
}

/// How a command-line parse error is shown: `None` for help and version,
/// which clap prints as they are; otherwise one line, without the
/// `embscope: ` prefix, naming the `--help` of the command in `args` (the
/// command line after the program name).
pub fn one_line(err: &clap::Error, args: &[String]) -> Option<String> {
    if matches!(
        err.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        return None;
    }
    // clap renders: "error: MESSAGE\n  more\n\n  tip: ...\n\nUsage: ...".
    let text = err.render().to_string();
    let mut paragraphs = text
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "));
    let first = paragraphs.next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or(&first).to_string();
    let mut extra: Vec<String> = paragraphs
        .filter_map(|p| p.strip_prefix("tip: ").map(str::to_string))
        .collect();
    extra.push(format!("see `{} --help`", command_of(args)));
    Some(format!("{message} ({})", extra.join("; ")))
}

/// `embscope SUBCOMMAND`, naming the first of `args` (the command line
/// after the program name) that is a subcommand, or just `embscope`.
fn command_of(args: &[String]) -> String {
    let cli = Cli::command();
    let sub = args
        .iter()
        .find(|a| cli.get_subcommands().any(|c| c.get_name() == a.as_str()));
    match sub {
        Some(sub) => format!("embscope {sub}"),
        None => "embscope".to_string(),
    }
}

/// When MODEL cannot be opened, is no path at all, and one of the later
/// positional arguments is an existing path, the user most likely swapped
/// them: the message saying so, for `command` whose usage is
/// `embscope command MODEL rest`.
pub fn swapped_model(command: &str, model: &str, later: &[String], rest: &str) -> Option<String> {
    if Path::new(model).exists() {
        return None;
    }
    let found = later.iter().find(|q| Path::new(q).exists())?;
    Some(format!(
        "`{model}` is not a model and `{found}` is; MODEL comes first: embscope {command} MODEL {rest}"
    ))
}

/// The completion script for `shell`.
pub fn completions(shell: clap_complete::Shell) -> Vec<u8> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "embscope", &mut out);
    out
}

/// The man page, as roff.
pub fn man_page() -> std::io::Result<Vec<u8>> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn error_of(args: &[&str]) -> String {
        let err = Cli::try_parse_from(args).expect_err("parse fails");
        let rest: Vec<String> = args[1..].iter().map(|a| a.to_string()).collect();
        one_line(&err, &rest).expect("an error, not help")
    }

    #[test]
    fn numbers() {
        assert_eq!(row_id("42"), Ok(42));
        assert_eq!(row_id("-1").unwrap_err(), "ids are non-negative integers");
        assert_eq!(row_id("x").unwrap_err(), "expected a non-negative integer");
        assert_eq!(at_least_one::<u64>("1"), Ok(1));
        assert_eq!(at_least_one::<u64>("0").unwrap_err(), "must be at least 1");
        assert_eq!(at_least_one::<u64>("-5").unwrap_err(), "must be at least 1");
        assert_eq!(at_least_one::<u8>("300").unwrap_err(), "300 is too large");
        assert_eq!(
            at_least_one::<u64>("5x").unwrap_err(),
            "expected a positive integer"
        );
    }

    #[test]
    fn parse_errors_are_one_line_with_the_command() {
        let e = error_of(&["embscope", "lookup", "m", "--id", "-1"]);
        assert_eq!(
            e,
            "invalid value '-1' for '--id <N>...': ids are non-negative integers (see `embscope lookup --help`)"
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
    fn help_and_version_are_not_errors() {
        for args in [["embscope", "--help"], ["embscope", "--version"]] {
            let err = Cli::try_parse_from(args).unwrap_err();
            assert_eq!(one_line(&err, &[]), None);
        }
    }

    #[test]
    fn swapped_only_when_a_later_argument_exists() {
        let here = env!("CARGO_MANIFEST_DIR").to_string();
        let msg = swapped_model("neighbors", "king", std::slice::from_ref(&here), "QUERY...");
        assert_eq!(
            msg.unwrap(),
            format!(
                "`king` is not a model and `{here}` is; MODEL comes first: embscope neighbors MODEL QUERY..."
            )
        );
        assert_eq!(
            swapped_model("neighbors", "m", &["king".into()], "QUERY..."),
            None
        );
        // A model that exists but does not open keeps its own error.
        let later = [here.clone()];
        assert_eq!(swapped_model("neighbors", &here, &later, "Q"), None);
    }
}
