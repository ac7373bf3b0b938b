//! Whether text output is coloured: `--color` first, then the environment
//! conventions (`NO_COLOR`, `CLICOLOR_FORCE`, `CLICOLOR`), then whether
//! stdout is a terminal. One function decides, so every command agrees.

/// When to colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorChoice {
    /// Colour a terminal, as the environment allows.
    Auto,
    /// Always colour, even into a pipe or file.
    Always,
    /// Never colour.
    Never,
}

/// Decides colour for `choice`, reading variables through `var` (unset and
/// empty are the same) and `terminal` telling whether stdout is a terminal.
///
/// With `--color auto`: a non-empty `NO_COLOR` turns colour off; else
/// `CLICOLOR_FORCE` other than `0` turns it on even into a pipe; else
/// `CLICOLOR=0` turns it off; else a terminal is coloured. `always` and
/// `never` win over the environment.
pub fn enabled(choice: ColorChoice, var: impl Fn(&str) -> Option<String>, terminal: bool) -> bool {
    let set = |name: &str| var(name).filter(|v| !v.is_empty());
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            if set("NO_COLOR").is_some() {
                false
            } else if set("CLICOLOR_FORCE").is_some_and(|v| v != "0") {
                true
            } else if set("CLICOLOR").is_some_and(|v| v == "0") {
                false
            } else {
                terminal
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColorChoice::{Always, Auto, Never};

    #[test]
    fn precedence() {
        // (choice, NO_COLOR, CLICOLOR_FORCE, CLICOLOR, terminal) -> colour
        let table = [
            (Auto, None, None, None, true, true),
            (Auto, None, None, None, false, false),
            (Auto, Some("1"), None, None, true, false),
            (Auto, Some(""), None, None, true, true),
            (Auto, None, None, Some("0"), true, false),
            (Auto, None, None, Some("1"), false, false),
            (Auto, None, Some("1"), None, false, true),
            (Auto, None, Some("1"), Some("0"), false, true),
            (Auto, None, Some("0"), None, false, false),
            (Auto, Some("1"), Some("1"), None, true, false),
            (Always, Some("1"), None, Some("0"), false, true),
            (Never, None, Some("1"), None, true, false),
        ];
        for (choice, no_color, force, clicolor, terminal, want) in table {
            let var = |name: &str| {
                match name {
                    "NO_COLOR" => no_color,
                    "CLICOLOR_FORCE" => force,
                    "CLICOLOR" => clicolor,
                    _ => None,
                }
                .map(str::to_string)
            };
            assert_eq!(
                enabled(choice, var, terminal),
                want,
                "{choice:?} NO_COLOR={no_color:?} CLICOLOR_FORCE={force:?} CLICOLOR={clicolor:?} tty={terminal}"
            );
        }
    }
}
