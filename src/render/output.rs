//! Which format `lookup` writes, from `--json`, `--format` and the `-o`
//! file's extension. Flags that contradict each other are a usage error,
//! never a silent choice.

use std::path::Path;

use crate::{Error, Result};

/// What `lookup` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned text.
    Table,
    /// One JSON document.
    Json,
    /// Comma-separated: id, token, norm, v0 ... v{d-1}.
    Csv,
    /// numpy .npy, float32 [n, d].
    Npy,
}

impl Format {
    /// The name `--format` takes for it.
    pub fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
            Format::Npy => "npy",
        }
    }
}

/// The format for `lookup`: `--format` or `--json` when given, else the
/// one the `-o` extension names (`.json`, `.csv`, `.npy`), else a table.
/// `--json` with another `--format`, a format other than the one the
/// extension names, or `--format npy` without `-o`, is an error.
pub fn lookup_format(json: bool, format: Option<Format>, output: Option<&Path>) -> Result<Format> {
    if format == Some(Format::Npy) && output.is_none() {
        return Err(Error::BadInput(
            "--format npy writes binary: give a file with -o FILE".into(),
        ));
    }
    let implied = output.and_then(|p| Some((p, implied_by(p)?)));
    let asked = match (json, format) {
        (true, Some(f)) if f != Format::Json => {
            return Err(Error::BadInput(format!(
                "--json and --format {} contradict each other: give one",
                f.name()
            )));
        }
        (true, _) => Some((Format::Json, "--json".to_string())),
        (false, Some(f)) => Some((f, format!("--format {}", f.name()))),
        (false, None) => None,
    };
    match (asked, implied) {
        (Some((f, flag)), Some((path, g))) if f != g => Err(Error::BadInput(format!(
            "-o `{}` names a .{} file but {flag} was given: drop one or make them agree",
            path.display(),
            g.name()
        ))),
        (Some((f, _)), _) => Ok(f),
        (None, Some((_, g))) => Ok(g),
        (None, None) => Ok(Format::Table),
    }
}

/// The format a file's extension names, if any.
fn implied_by(path: &Path) -> Option<Format> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "json" => Some(Format::Json),
        "csv" => Some(Format::Csv),
        "npy" => Some(Format::Npy),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Format::{Csv, Json, Npy, Table};

    fn pick(json: bool, format: Option<Format>, out: Option<&str>) -> Result<Format> {
        lookup_format(json, format, out.map(Path::new))
    }

    #[test]
    fn extension_decides_when_format_is_absent() {
        assert_eq!(pick(false, None, None).unwrap(), Table);
        assert_eq!(pick(false, None, Some("rows.npy")).unwrap(), Npy);
        assert_eq!(pick(false, None, Some("rows.CSV")).unwrap(), Csv);
        assert_eq!(pick(false, None, Some("rows.json")).unwrap(), Json);
        assert_eq!(pick(false, None, Some("rows.txt")).unwrap(), Table);
        assert_eq!(pick(false, None, Some("rows")).unwrap(), Table);
    }

    #[test]
    fn flags_agreeing_with_the_extension() {
        assert_eq!(pick(true, None, Some("x.json")).unwrap(), Json);
        assert_eq!(pick(true, Some(Json), None).unwrap(), Json);
        assert_eq!(pick(false, Some(Npy), Some("x.npy")).unwrap(), Npy);
        assert_eq!(pick(false, Some(Csv), Some("x.txt")).unwrap(), Csv);
        assert_eq!(pick(false, Some(Table), Some("x.txt")).unwrap(), Table);
    }

    #[test]
    fn contradictions_are_errors() {
        let e = pick(true, Some(Npy), Some("x.npy"))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--json and --format npy contradict each other: give one");
        let e = pick(false, Some(Csv), Some("rows.npy"))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "-o `rows.npy` names a .npy file but --format csv was given: drop one or make them agree"
        );
        assert!(pick(true, None, Some("x.csv")).is_err());
        assert!(pick(false, Some(Table), Some("x.json")).is_err());
        let e = pick(false, Some(Npy), None).unwrap_err().to_string();
        assert_eq!(e, "--format npy writes binary: give a file with -o FILE");
    }
}
