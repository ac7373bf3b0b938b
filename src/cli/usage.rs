//! How the command line answers a user who got it wrong: a parse error as
//! one `embscope: …` line naming the command's `--help`, and a MODEL given
//! after its queries pointed out.

use std::path::Path;

use clap::CommandFactory;
use clap::error::ErrorKind;

use super::args::Cli;

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
