//! Text for `check`: one line per finding (severity, code, message), its
//! listed evidence indented below, and a summary line. The findings known
//! before the value pass are printed first, as soon as they are known.
//! And its picture (`--plot`, and the report's page): a histogram of the
//! row norms of each matrix read, the rows of note outlined.

use std::fmt::Write;

use anstyle::AnsiColor;
use serde_json::Value;

use super::svg::{Histogram, Rect, Subset, Svg};
use super::{Human, Style, plural};
use crate::cmd::check::{CheckReport, Finding, Marked, MatrixNorms, Severity};

/// Bins of a norm histogram.
const NORM_BINS: usize = 60;
/// A panel of the picture, one per matrix, in pixels.
const PANEL: (f64, f64) = (560.0, 360.0);

fn severity(style: &Style, s: Severity) -> String {
    let color = match s {
        Severity::Error => AnsiColor::Red,
        Severity::Warn => AnsiColor::Yellow,
        Severity::Info => AnsiColor::Blue,
    };
    style.color(color, &format!("{:<5}", s.name()))
}

/// A JSON value on one line: strings bare, `{id, token}` objects as
/// `12 "tok"`, lists joined by commas, objects as `key: value` pairs.
fn inline(v: &Value) -> String {
    match v {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().map(item).collect::<Vec<_>>().join(", "),
        Value::Object(map) if map.contains_key("id") && map.contains_key("token") => {
            let mut parts: Vec<String> = Vec::new();
            if !map["id"].is_null() {
                parts.push(map["id"].to_string());
            }
            if let Value::String(t) = &map["token"] {
                parts.push(format!("\"{t}\""));
            }
            let rest: Vec<String> = map
                .iter()
                .filter(|(k, _)| *k != "id" && *k != "token")
                .map(|(k, v)| format!("{k} {}", inline(v)))
                .collect();
            if !rest.is_empty() {
                parts.push(format!("({})", rest.join(", ")));
            }
            parts.join(" ")
        }
        Value::Object(map) => {
            let parts: Vec<String> = map
                .iter()
                .map(|(k, v)| match v {
                    Value::Array(_) | Value::Object(_) => format!("{k}: [{}]", inline(v)),
                    _ => format!("{k}: {}", inline(v)),
                })
                .collect();
            parts.join("; ")
        }
        Value::Number(n) if n.is_f64() => n
            .as_f64()
            .map_or_else(|| n.to_string(), |f| format!("{f:.4}")),
        other => other.to_string(),
    }
}

/// A list item: an object naming a tensor, file or token (without an id)
/// reads `name (key value, …)`; anything else as [`inline`].
fn item(v: &Value) -> String {
    let Value::Object(map) = v else {
        return inline(v);
    };
    let Some((key, Value::String(name))) = map
        .iter()
        .find(|(k, v)| ["tensor", "file", "token"].contains(&k.as_str()) && v.is_string())
    else {
        return inline(v);
    };
    if map.contains_key("id") {
        return inline(v);
    };
    let rest: Vec<String> = map
        .iter()
        .filter(|(k, _)| *k != key)
        .map(|(k, v)| format!("{k} {}", inline(v)))
        .collect();
    if rest.is_empty() {
        name.clone()
    } else {
        format!("{name} ({})", rest.join(", "))
    }
}

/// One finding: severity, code and message on a line, its listed
/// evidence indented below.
fn finding(out: &mut String, style: &Style, f: &Finding) {
    let _ = writeln!(
        out,
        "{} {}  {}",
        severity(style, f.severity),
        style.bold(f.code),
        f.message
    );
    for line in evidence_lines(f) {
        let _ = writeln!(out, "      {}", style.dim(&line));
    }
}

/// The evidence of `f` worth a line each, as text shows it (and the
/// report's page): scalars are in the message already; lists (ids with
/// their tokens, groups, files) are the evidence worth a line, their first
/// few items at least. --json has everything.
pub fn evidence_lines(f: &Finding) -> Vec<String> {
    let mut lines = Vec::new();
    if let Value::Object(map) = &f.evidence {
        for (k, v) in map {
            let Value::Array(items) = v else { continue };
            let mut line = format!("{k}: ");
            let shown: Vec<String> = items.iter().take(SHOWN_ITEMS).map(item).collect();
            line.push_str(&shown.join(", "));
            // `total` counts the list evidence cut to its first items
            // (`truncated`); other lists are complete.
            let total = match (map.get("total"), map.get("truncated")) {
                (Some(Value::Number(n)), Some(Value::Bool(true)))
                    if CUT_LISTS.contains(&k.as_str()) =>
                {
                    n.as_u64().map(|n| n as usize)
                }
                _ => None,
            };
            match total {
                Some(total) => {
                    let _ = write!(
                        line,
                        ", … {} more ({total} in all; --json lists the first {})",
                        total.saturating_sub(shown.len()),
                        items.len()
                    );
                }
                None if items.len() > SHOWN_ITEMS => {
                    let _ = write!(line, ", … {} more in --json", items.len() - SHOWN_ITEMS);
                }
                None => {}
            }
            lines.push(line);
        }
    }
    lines
}

/// Items of an evidence list shown in text output.
const SHOWN_ITEMS: usize = 8;

/// The evidence lists that may be cut, which `total` and `truncated` describe.
const CUT_LISTS: &[&str] = &["ids", "tokens", "first_groups"];

/// The findings known before the value pass ([`Check::early`]), shown
/// while it runs.
///
/// [`Check::early`]: crate::cmd::check::Check::early
pub fn early<'a>(findings: impl Iterator<Item = &'a Finding>, style: &Style) -> String {
    let mut out = String::new();
    for f in findings {
        finding(&mut out, style, f);
    }
    out
}

/// The findings not shown by [`early`], then the summary line.
impl Human for CheckReport {
    fn human(&self, style: &Style) -> String {
        let mut out = String::new();
        for f in self.findings.iter().filter(|f| !f.early) {
            finding(&mut out, style, f);
        }
        let c = &self.counts;
        let _ = writeln!(
            out,
            "{}: {}, {}, {}",
            style.bold(&self.model),
            plural(c.error, "error"),
            plural(c.warn, "warning"),
            plural(c.info, "note"),
        );
        out
    }
}

/// The picture: a histogram of the row norms of each matrix the value
/// pass read (log counts when they span decades), side by side, with the
/// rows of note outlined.
pub fn check_svg(r: &CheckReport) -> String {
    let panels = &r.norms.matrices;
    let n = panels.len().max(1) as f64;
    let (w, h) = PANEL;
    let mut svg = Svg::new(w * n + 10.0 * (n - 1.0), h + 24.0);
    for (k, m) in panels.iter().enumerate() {
        let area = Rect::new(k as f64 * (w + 10.0), 0.0, w, h);
        norm_histogram(&mut svg, area, m, &r.norms.marked);
    }
    let what = match panels.len() {
        0 => "no matrix's values were read".to_string(),
        _ => "L2 norm of every row".to_string(),
    };
    svg.caption(&format!("embscope check: {what} of {}", r.model));
    svg.finish()
}

/// The histogram of `m`'s finite row norms, the `marked` sets outlined.
fn norm_histogram(svg: &mut Svg, area: Rect, m: &MatrixNorms, marked: &[Marked]) {
    let finite = || {
        m.norms
            .iter()
            .map(|&x| f64::from(x))
            .filter(|x| x.is_finite())
    };
    let (lo, hi) = finite().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let (lo, hi) = match (lo.is_finite(), hi > lo) {
        (false, _) => (0.0, 1.0),
        (true, false) => (lo - 0.5, lo + 0.5),
        (true, true) => (lo, hi),
    };
    let bin = |x: f64| (((x - lo) / (hi - lo) * NORM_BINS as f64) as usize).min(NORM_BINS - 1);
    let count = |norms: &mut dyn Iterator<Item = f64>| {
        let mut counts = vec![0u64; NORM_BINS];
        for x in norms.filter(|x| x.is_finite()) {
            counts[bin(x)] += 1;
        }
        counts
    };
    let counts = count(&mut finite());
    let subsets: Vec<(&str, Vec<u64>)> = marked
        .iter()
        .map(|set| {
            let mut norms = (set.ids.iter())
                .filter_map(|&id| m.norms.get(id as usize))
                .map(|&x| f64::from(x));
            (set.name, count(&mut norms))
        })
        .filter(|(_, c)| c.iter().any(|&c| c > 0))
        .collect();
    let subsets: Vec<Subset> = (subsets.iter())
        .map(|(name, counts)| Subset { name, counts })
        .collect();
    let left_out = m.norms.len() - finite().count();
    let x_label = match left_out {
        0 => "L2 norm of the row".to_string(),
        n => format!(
            "L2 norm of the row ({} holding NaN or Inf left out)",
            plural(n, "row")
        ),
    };
    let title = format!("{} ({})", m.name, m.role);
    Histogram {
        title: &title,
        x_label: &x_label,
        y_label: "rows",
        min: lo,
        max: hi,
        counts: &counts,
        subsets: &subsets,
        cuts: &[],
    }
    .draw(svg, area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evidence_inline_forms() {
        assert_eq!(inline(&json!("a.weight")), "a.weight");
        assert_eq!(
            inline(&json!([{"id": 3, "token": "x"}, {"id": 4, "token": null}])),
            "3 \"x\", 4"
        );
        assert_eq!(inline(&json!({"a": 1, "b": [1, 2]})), "a: 1; b: [1, 2]");
        assert_eq!(
            inline(&json!([{"tensor": "e", "dtype": "BF16"}, {"file": "c.json"}])),
            "e (dtype BF16), c.json"
        );
        assert_eq!(
            inline(&json!([{"token": "[SEP]", "a_id": 6}, {"id": 3, "token": "x"}])),
            "[SEP] (a_id 6), 3 \"x\""
        );
    }
}
