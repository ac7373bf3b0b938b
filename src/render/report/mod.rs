//! The `report` page: one self-contained HTML file (its style sheet and
//! pictures inline, no script, nothing fetched: a content security policy
//! forbids it), which opens offline and prints one section a page. Each
//! section shows a command's report, its picture the same as that
//! command's `--plot`, and the JSON the command prints, so a reader can
//! take the numbers.
//!
//! | file | what it holds |
//! |---|---|
//! | `mod.rs` | the page around the sections, its style sheet, the line printed when it is written |
//! | `sections.rs` | each section, from each command's report |
//! | `fine_tune.rs` | the fine-tune section, from `diff` |
//! | `figures.rs` | the page's own pictures: the parameters' bars and the map |
//! | `html.rs` | escaped text, tables, figures and JSON blocks |

mod figures;
mod fine_tune;
mod html;
mod sections;

use std::fmt::Write as _;
use std::path::Path;

use crate::cmd::diff::MatrixDiff;
use crate::render::{Style, bytes, count, plural};
use crate::report::Report;
use html::esc;

/// The style sheet: readable on a screen, one section a page in print,
/// pictures scaled to the width.
const STYLE: &str = r#"
:root{--ink:#222;--muted:#5f5f5f;--line:#dcdcdc;--accent:#0b5f96}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:var(--ink);background:#fff}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
header h1{font-size:25px;margin:0 0 6px;overflow-wrap:anywhere}
header p{margin:0 0 10px;color:var(--muted)}
nav a{margin-right:16px;color:var(--accent)}
section{margin-top:34px}
h2{font-size:20px;margin:0 0 10px;padding-top:10px;border-top:2px solid var(--ink)}
code{font:13px/1.3 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace;background:#f2f2f2;padding:0 3px;border-radius:3px;overflow-wrap:anywhere}
table{border-collapse:collapse;margin:10px 0 16px;font-size:14px}
th,td{text-align:left;padding:4px 10px;border-bottom:1px solid var(--line);vertical-align:top}
thead th{border-bottom:2px solid #999}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
table.facts th{color:var(--muted);font-weight:600;white-space:nowrap}
figure{margin:16px 0}
figure svg{display:block;max-width:100%;height:auto}
figcaption{color:var(--muted);font-size:13px;margin-top:4px;max-width:900px}
.sev{display:inline-block;min-width:48px;text-align:center;border-radius:3px;padding:0 6px;font-weight:700;font-size:12px;-webkit-print-color-adjust:exact;print-color-adjust:exact}
.sev-error{background:#a8071a;color:#fff}
.sev-warn{background:#f5c04a;color:#222}
.sev-info{background:#e6edf5;color:#222;border:1px solid #9fb3c8}
table.findings td:nth-child(2) code{white-space:nowrap;overflow-wrap:normal}
.evidence{color:var(--muted);font-size:12.5px;margin-top:2px;overflow-wrap:anywhere}
.missing{padding:10px 14px;background:#fff4e0;border-left:4px solid #e69f00}
details.data{margin:8px 0}
details.data summary{cursor:pointer;color:var(--muted);font-size:13px}
details.data pre{max-height:360px;overflow:auto;background:#f7f7f7;padding:10px;font-size:12px}
footer{margin-top:40px;color:var(--muted);font-size:13px}
@media print{
 @page{size:A4;margin:14mm}
 body{font-size:11pt}
 nav,details.data{display:none}
 main{max-width:none;padding:0}
 section{break-before:page;margin-top:0}
 figure,tr{break-inside:avoid}
 a{color:inherit;text-decoration:none}
}
"#;

/// The sections in order: their ids and headings, for the links on top
/// (`diff` only with a base).
const SECTIONS: [(&str, &str); 5] = [
    ("summary", "Summary"),
    ("check", "Check"),
    ("undertrained", "Under-trained rows"),
    ("diff", "Fine-tune"),
    ("map", "Map"),
];

/// The page of `r`.
pub fn page(r: &Report) -> String {
    let why = |section: &str| {
        (r.missing.iter())
            .find(|m| m.section == section)
            .map(|m| m.reason.as_str())
    };
    let mut out = String::with_capacity(1 << 20);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\"/>\n<title>embscope report: {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&r.model)
    );
    let _ = write!(
        out,
        "<header>\n<h1>Vocabulary layers of {}</h1>\n<p>The input embedding and the output head, as <code>embscope</code> reads them from the files.</p>\n<nav>",
        html::code(&r.model)
    );
    let with_diff = r.diff.is_some() || why("diff").is_some();
    for (id, name) in SECTIONS
        .into_iter()
        .filter(|&(id, _)| id != "diff" || with_diff)
    {
        let _ = write!(out, "<a href=\"#{id}\">{name}</a>");
    }
    out.push_str("</nav>\n</header>\n");
    out.push_str(&sections::summary(r));
    out.push_str(&sections::check(r, why("check")));
    out.push_str(&sections::undertrained(r, why("undertrained")));
    match (&r.diff, why("diff")) {
        (Some(d), _) => out.push_str(&fine_tune::fine_tune(d)),
        (None, Some(why)) => {
            out.push_str(&sections::section("diff", "Fine-tune", &html::missing(why)))
        }
        (None, None) => {}
    }
    out.push_str(&sections::map(r, why("map")));
    let _ = write!(
        out,
        "<footer>Made by embscope {}. Each section shows a command's report, and holds the JSON that command prints.</footer>\n</main>\n</body>\n</html>\n",
        env!("CARGO_PKG_VERSION")
    );
    out
}

/// What `report` prints once the page is written to `path` (`size`
/// bytes): where, and a line per section.
pub fn written(r: &Report, path: &Path, size: usize, style: &Style) -> String {
    let mut out = format!(
        "{}  {} ({})\n",
        style.bold("report"),
        path.display(),
        bytes(size as u64)
    );
    let summary = format!(
        "{} parameters, the vocabulary layers {}",
        count(r.size.total_params),
        crate::render::percent(r.size.vocab_share)
    );
    let check = r.check.as_ref().map(|c| {
        let n = &c.counts;
        format!(
            "{}, {}, {}",
            plural(n.error, "error"),
            plural(n.warn, "warning"),
            plural(n.info, "note")
        )
    });
    let undertrained = r.undertrained.as_ref().map(|u| {
        format!(
            "{} strong ({} outside the reference set)",
            plural(u.strong, "row"),
            count(u.strong_outside_reference as u64)
        )
    });
    let diff = r.diff.as_ref().map(|d| {
        let most = |f: fn(&MatrixDiff) -> usize| {
            [&d.embedding, &d.head]
                .iter()
                .filter_map(|m| m.as_ref().map(f))
                .max()
                .unwrap_or(0)
        };
        format!(
            "{} changed and {} added, in the matrix with most",
            plural(most(|m| m.changed), "row"),
            count(most(|m| m.added.len()) as u64)
        )
    });
    let map = r.map.as_ref().map(|m| {
        format!(
            "{} sampled rows and {} of note",
            count(m.sample_rows as u64),
            count((m.points.len() - m.sample_rows) as u64)
        )
    });
    let lines = [
        ("summary", Some(summary)),
        ("check", check),
        ("undertrained", undertrained),
        ("diff", diff),
        ("map", map),
    ];
    for (name, text) in lines {
        let missing = r.missing.iter().find(|m| m.section == name);
        let text = match (text, missing) {
            (Some(text), _) => text,
            (None, Some(m)) => format!("not available: {}", m.reason),
            (None, None) => continue,
        };
        let _ = writeln!(out, "{name:<13} {text}");
    }
    out
}
