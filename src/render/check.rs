//! Text for `check`: one line per finding (severity, code, message), its
//! listed evidence indented below, and a summary line. The findings known
//! before the value pass are printed first, as soon as they are known.

use std::fmt::Write;

use anstyle::AnsiColor;
use serde_json::Value;

use super::{Human, Style, plural};
use crate::cmd::check::{CheckReport, Finding, Severity};

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
    // Scalars are in the message already; lists (ids with their tokens,
    // groups, files) are the evidence worth a line, their first few items
    // at least. --json has everything.
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
            let _ = writeln!(out, "      {}", style.dim(&line));
        }
    }
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
