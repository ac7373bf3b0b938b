//! Output in one place: every report is plain data that derives `Serialize`
//! (`--json` prints it as one document) and implements [`Human`] for text;
//! some are written as files or drawn as pictures too.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | [`Human`], printing, number and table formats |
//! | `info.rs`, `tensors.rs`, `size.rs`, `neighbors.rs` | each command's text |
//! | `check.rs`, `undertrained.rs`, `diff.rs` | each command's text, and its picture (`--plot`) |
//! | `lookup.rs` | `lookup`'s table, CSV and `.npy` |
//! | `similarity.rs` | `similarity`'s table, CSV and picture |
//! | `rows.rs` | `rows`' CSV, JSON and structured `.npy` |
//! | `report/` | `report`'s page (see its table) |
//! | `svg/` | pictures: histograms, heatmaps, scatter plots, stacked and ranked bars (see its table) |
//! | `output.rs` | the format a file's extension or a flag asks for |
//! | `file.rs` | output files checked first and put in place whole |
//! | `color.rs` | whether to colour text |

pub mod check;
pub mod color;
pub mod diff;
pub mod file;
mod info;
pub mod lookup;
mod neighbors;
pub mod output;
pub mod report;
pub mod rows;
pub mod similarity;
mod size;
pub mod svg;
mod tensors;
pub mod undertrained;

use std::fmt::Write as _;
use std::io::{self, IsTerminal, Write};

use serde::Serialize;

pub use crate::units::bytes;

/// Text output of a report.
pub trait Human {
    /// The report as text for a terminal, ending with a newline.
    fn human(&self, style: &Style) -> String;
}

/// Writes `report` to stdout: JSON when `json`, else text.
pub fn emit<R: Serialize + Human>(report: &R, json: bool, style: &Style) -> io::Result<()> {
    if json {
        stdout(&self::json(report)?)
    } else {
        stdout(report.human(style).as_bytes())
    }
}

/// A report as one pretty JSON document with a final newline.
pub fn json<R: Serialize>(report: &R) -> io::Result<Vec<u8>> {
    let mut v = serde_json::to_vec_pretty(report).map_err(io::Error::other)?;
    v.push(b'\n');
    Ok(v)
}

/// Writes bytes to stdout and flushes.
pub fn stdout(bytes: &[u8]) -> io::Result<()> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()
}

/// Terminal styling, on or off as [`color::enabled`] decides.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    color: bool,
}

impl Style {
    /// Decides from `--color`, the environment and whether stdout is a terminal.
    pub fn detect(choice: color::ColorChoice) -> Style {
        let var = |name: &str| std::env::var(name).ok();
        Style {
            color: color::enabled(choice, var, io::stdout().is_terminal()),
        }
    }

    /// No styling at all.
    pub fn plain() -> Style {
        Style { color: false }
    }

    fn paint(&self, style: anstyle::Style, s: &str) -> String {
        if self.color {
            format!("{}{s}{}", style.render(), style.render_reset())
        } else {
            s.to_string()
        }
    }

    /// Bold text (labels, headers).
    pub fn bold(&self, s: &str) -> String {
        self.paint(anstyle::Style::new().bold(), s)
    }

    /// Dimmed text (secondary detail).
    pub fn dim(&self, s: &str) -> String {
        self.paint(anstyle::Style::new().dimmed(), s)
    }

    /// Text in a colour (severities).
    pub fn color(&self, c: anstyle::AnsiColor, s: &str) -> String {
        self.paint(anstyle::Style::new().fg_color(Some(c.into())).bold(), s)
    }
}

/// `1234567` → `1,234,567`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `n` and a noun, plural unless `n` is 1: `1 tensor`, `2,048 tensors`.
pub fn plural(n: usize, noun: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {noun}{s}", count(n as u64))
}

/// A fraction as a percentage: `0.1234` → `12.3%`.
pub fn percent(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// A shape as `[128256, 4096]`.
pub fn shape(s: &[usize]) -> String {
    format!(
        "[{}]",
        s.iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// One `label  value` line of a key-value report (`info`, `size`), the
/// label bold and padded to a column.
fn field(out: &mut String, style: &Style, label: &str, value: &str) {
    let _ = writeln!(out, "{}  {value}", style.bold(&format!("{label:<10}")));
}

/// The last path component of `path`.
fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}

/// A table with no borders, numbers right-aligned where asked.
pub fn table(header: &[&str], right: &[usize], rows: Vec<Vec<String>>) -> String {
    use comfy_table::{CellAlignment, ContentArrangement, Table, presets};
    let mut t = Table::new();
    t.load_style(presets::NOTHING)
        .force_no_tty()
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    for row in rows {
        t.add_row(row);
    }
    for &i in right {
        if let Some(col) = t.column_mut(i) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
    // comfy-table pads the first and last columns with one space; trim lines.
    let mut out: String = t
        .lines()
        .map(|l| l.strip_prefix(' ').unwrap_or(&l).trim_end().to_string())
        .collect::<Vec<_>>()
        .join("\n");
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_formats() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(525_336_576), "525,336,576");
        assert_eq!(plural(1, "tensor"), "1 tensor");
        assert_eq!(plural(0, "tensor"), "0 tensors");
        assert_eq!(plural(2048, "shard"), "2,048 shards");
        assert_eq!(percent(0.1234), "12.3%");
        assert_eq!(shape(&[3, 4]), "[3, 4]");
    }
}
