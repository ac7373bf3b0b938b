//! The command line's conventions outside any one command: value parsers
//! whose messages fit after clap's `invalid value 'X' for '--flag <N>': `
//! (lists of ids and ranges, counts), argument errors as one `embscope: …`
//! line naming the command's `--help`, and a MODEL given after its queries
//! pointed out. It knows clap's error and command types, not embscope's
//! own command line, which [`crate::cli`] builds on top of it.

use std::path::Path;

use clap::error::ErrorKind;

/// How a command-line parse error is shown: `None` for help and version,
/// which clap prints as they are; otherwise one line, without the
/// `embscope: ` prefix, naming the `--help` of the command in `args` (the
/// command line after the program name) of the command `cli`.
pub fn one_line(err: &clap::Error, cli: &clap::Command, args: &[String]) -> Option<String> {
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
    extra.push(format!("see `{} --help`", command_of(cli, args)));
    Some(format!("{message} ({})", extra.join("; ")))
}

/// `embscope SUBCOMMAND`, naming the first of `args` (the command line
/// after the program name) that is a subcommand, or just `embscope`.
fn command_of(cli: &clap::Command, args: &[String]) -> String {
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

/// One `--id` value: ids and inclusive ranges, as [`id_list`] reads them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdList(pub Vec<(u64, u64)>);

/// Parses ids and inclusive ranges separated by commas or spaces (`42`,
/// `0-5,42`, `100-200, 5`, `1 2 3`): the one syntax wherever ids are given
/// (`lookup --id`, `undertrained --reference`). Ranges stay ranges: they
/// are checked against the matrix before any is expanded.
pub fn id_list(s: &str) -> Result<IdList, String> {
    if s.trim().is_empty() {
        return Err("no ids given".into());
    }
    let mut out = Vec::new();
    for piece in s.split(',') {
        // `100 - 200` is a range; `1 2` two ids.
        let piece = piece
            .split('-')
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("-");
        if piece.is_empty() {
            return Err(format!("empty item in `{s}`"));
        }
        for item in piece.split_whitespace() {
            out.push(id_or_range(item)?);
        }
    }
    Ok(IdList(out))
}

/// One id (`5`, as `(5, 5)`) or inclusive range (`5-9`).
fn id_or_range(item: &str) -> Result<(u64, u64), String> {
    let Some((a, b)) = item.split_once('-') else {
        let n = id(item)?;
        return Ok((n, n));
    };
    if a.is_empty() && id(b).is_ok() {
        return Err(format!("ids are non-negative integers, not `{item}`"));
    }
    if a.is_empty() || b.is_empty() || b.contains('-') {
        return Err(format!("`{item}` is not an id or a range"));
    }
    let (a, b) = (id(a)?, id(b)?);
    if a > b {
        return Err(format!("range `{item}` runs backwards"));
    }
    Ok((a, b))
}

/// One id: a non-negative integer.
fn id(s: &str) -> Result<u64, String> {
    s.parse().map_err(|_| {
        if !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit()) {
            format!("`{s}` is too large to be an id")
        } else {
            format!("`{s}` is not a non-negative integer id")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_ranges_separated_by_commas_or_spaces() {
        let ok = |s: &str| id_list(s).unwrap().0;
        assert_eq!(ok("42"), [(42, 42)]);
        assert_eq!(ok("0-5"), [(0, 5)]);
        assert_eq!(ok("100-200, 5,7-7"), [(100, 200), (5, 5), (7, 7)]);
        assert_eq!(ok("1 2  3"), [(1, 1), (2, 2), (3, 3)]);
        assert_eq!(ok(" 100 - 200 ,5 9-10 "), [(100, 200), (5, 5), (9, 10)]);
        // A range is kept as written, however large: the matrix bounds it.
        assert_eq!(ok("0-99999999999"), [(0, 99_999_999_999)]);
    }

    #[test]
    fn bad_lists_say_which_item() {
        for (bad, want) in [
            ("", "no ids given"),
            (" ", "no ids given"),
            ("1,,2", "empty item in `1,,2`"),
            ("1,", "empty item in `1,`"),
            ("x", "`x` is not a non-negative integer id"),
            ("3,x-4", "`x` is not a non-negative integer id"),
            ("-1", "ids are non-negative integers, not `-1`"),
            ("2,-3", "ids are non-negative integers, not `-3`"),
            ("4-", "`4-` is not an id or a range"),
            ("-", "`-` is not an id or a range"),
            ("1-2-3", "`1-2-3` is not an id or a range"),
            ("5-2", "range `5-2` runs backwards"),
            (
                "99999999999999999999",
                "`99999999999999999999` is too large to be an id",
            ),
        ] {
            assert_eq!(id_list(bad).unwrap_err(), want, "{bad:?}");
        }
    }

    #[test]
    fn counts() {
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
