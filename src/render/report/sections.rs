//! The page's sections, each from a command's report: the summary (`info`
//! and `size`), the check (`check`, with its picture), the under-trained
//! rows (`undertrained`, with its picture) and the map. Each ends with
//! the JSON it was made from.

use std::fmt::Write as _;

use super::figures::{map_svg, scenario, size_svg};
use super::html::{Cell, code, esc, facts, figure, json_block, missing, table};
use crate::cmd::check::CheckReport;
use crate::cmd::undertrained::UndertrainedReport;
use crate::render::check::{check_svg, evidence_lines};
use crate::render::undertrained::{token_kind, undertrained_svg};
use crate::render::{bytes, count, json, percent, plural, shape};
use crate::report::{MapReport, Report};
use crate::roles::TieStatus;

/// A section: its id, heading, and body.
pub fn section(id: &str, heading: &str, body: &str) -> String {
    format!(
        "<section id=\"{id}\">\n<h2>{}</h2>\n{body}</section>\n",
        esc(heading)
    )
}

/// The command line that prints a report's JSON, for the reader to run.
pub(super) fn command(cmd: &str, model: &str, flags: &str) -> String {
    let line = format!(
        "embscope --json {cmd} {} {flags}",
        super::html::shell_word(model)
    );
    format!("the output of {}", code(line.trim_end()))
}

/// A report's JSON under its section, as `what` (HTML) prints it.
pub(super) fn data<R: serde::Serialize>(id: &str, what: &str, report: &R) -> String {
    match json(report) {
        Ok(bytes) => json_block(id, what, &bytes),
        Err(e) => missing(&e.to_string()),
    }
}

/// The summary: the files, the config, the two matrices and the tie,
/// the tokenizer, and the vocabulary layers' share of the model.
pub fn summary(r: &Report) -> String {
    let (i, s) = (&r.info, &r.size);
    let mut kinds: Vec<String> = Vec::new();
    for f in &i.files {
        let n = i.files.iter().filter(|g| g.kind == f.kind).count();
        let k = if n > 1 {
            plural(n, &f.kind)
        } else {
            f.kind.clone()
        };
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    let total: u64 = i.files.iter().map(|f| f.bytes).sum();
    let mut rows = vec![(
        "files",
        format!("{} ({})", esc(&kinds.join(", ")), bytes(total)),
    )];
    if let Some(c) = &i.config {
        let mut parts: Vec<String> = Vec::new();
        parts.extend(c.model_type.as_deref().map(code));
        let mut num = |k: &str, v: Option<u64>| {
            if let Some(v) = v {
                parts.push(format!("{} {}", code(k), count(v)));
            }
        };
        num("vocab_size", c.vocab_size);
        num("hidden_size", c.hidden_size);
        parts.extend(
            c.torch_dtype
                .as_deref()
                .map(|d| format!("{} {}", code("torch_dtype"), esc(d))),
        );
        rows.push(("config", parts.join(" · ")));
    }
    let tensor = |t: &crate::cmd::info::RoleTensor| {
        let t = &t.tensor;
        format!(
            "{} {} {}, {}",
            code(&t.name),
            shape(&t.shape),
            esc(&t.dtype),
            bytes(t.bytes)
        )
    };
    match &i.embedding {
        Some(e) => rows.push(("embedding", tensor(e))),
        None => rows.push(("embedding", "none found".into())),
    }
    let head = match (&i.head, i.tie.status) {
        (Some(h), _) => tensor(h),
        (None, TieStatus::Tied) => "the embedding (tied)".into(),
        (None, status) => esc(status.describe()),
    };
    rows.push(("head", head));
    let flag = match i.tie.config {
        Some(f) => format!("{} {f}", code("tie_word_embeddings")),
        None => format!(
            "no {} (resolves to {})",
            code("tie_word_embeddings"),
            i.tie.resolved
        ),
    };
    rows.push(("tie", format!("{}; {flag}", esc(i.tie.status.describe()))));
    rows.push((
        "tokenizer",
        match &i.tokenizer {
            Some(t) => format!(
                "{} {}, {} ids, {} added, {} special",
                esc(&t.model),
                code(&t.file.display().to_string()),
                count(t.size as u64),
                count(t.added as u64),
                count(t.special as u64)
            ),
            None => {
                "none found: rows are not named, and the sections below say what that leaves out"
                    .into()
            }
        },
    ));
    rows.push((
        "parameters",
        format!(
            "{} in all; the vocabulary layers {} ({} of them, {})",
            count(s.total_params),
            count(s.vocab_params),
            percent(s.vocab_share),
            bytes(s.vocab_bytes)
        ),
    ));
    let mut body = facts(&rows);
    body.push_str(&figure(
        &size_svg(s, &r.what_if),
        "Parameters of the embedding, the head and the rest of the model, as stored and under <code>size</code>'s what-if flags.",
    ));
    let scenarios: Vec<Vec<Cell>> = (r.what_if.iter())
        .filter_map(|w| {
            let f = w.size.what_if.as_ref()?;
            Some(vec![
                Cell::html(code(&w.flags)),
                Cell::text(&scenario(w, s)),
                Cell::num(&count(f.total_params)),
                Cell::num(&bytes(f.total_bytes)),
                Cell::num(&signed_bytes(f.delta_bytes)),
                Cell::num(&percent(f.vocab_share)),
            ])
        })
        .collect();
    if !scenarios.is_empty() {
        body.push_str(&table(
            "what-if",
            &[
                "size flags",
                "what changes",
                "parameters",
                "bytes",
                "change",
                "vocabulary share",
            ],
            scenarios,
        ));
    }
    let m = &r.model;
    body.push_str(&data("info", &command("info", m, ""), &r.info));
    body.push_str(&data("size", &command("size", m, ""), &r.size));
    for (k, w) in r.what_if.iter().enumerate() {
        let id = format!("size-{}", k + 1);
        body.push_str(&data(&id, &command("size", m, &w.flags), &w.size));
    }
    section("summary", "Summary", &body)
}

/// `+1.05 GB` or `-1.05 GB`.
fn signed_bytes(delta: i128) -> String {
    let sign = if delta < 0 { "-" } else { "+" };
    format!(
        "{sign}{}",
        bytes(delta.unsigned_abs().min(u128::from(u64::MAX)) as u64)
    )
}

/// `check`: the counts, the findings errors first, and the row norms.
pub fn check(r: &Report, why: Option<&str>) -> String {
    let Some(c) = &r.check else {
        return section(
            "check",
            "Consistency check",
            &missing(why.unwrap_or("check did not run")),
        );
    };
    section("check", "Consistency check", &check_body(c, &r.model))
}

fn check_body(c: &CheckReport, model: &str) -> String {
    let n = &c.counts;
    let mut body = format!(
        "<p>{}, {}, {}.</p>\n",
        plural(n.error, "error"),
        plural(n.warn, "warning"),
        plural(n.info, "note")
    );
    let rows: Vec<Vec<Cell>> = (c.findings.iter())
        .map(|f| {
            let sev = f.severity.name();
            let mut message = esc(&f.message);
            for line in evidence_lines(f) {
                let _ = write!(message, "<div class=\"evidence\">{}</div>", esc(&line));
            }
            vec![
                Cell::html(format!("<span class=\"sev sev-{sev}\">{sev}</span>")),
                Cell::html(code(f.code)),
                Cell::html(message),
            ]
        })
        .collect();
    if !rows.is_empty() {
        body.push_str(&table("findings", &["severity", "code", "finding"], rows));
    }
    body.push_str(&figure(
        &check_svg(c),
        "The L2 norm of every row (log counts where they span decades), from <code>check</code>'s pass; outlined: the special, reserved or unused, and padding rows, and those whose embedding looks untrained (<code>undertrained-candidates</code>). The same picture as <code>check --plot</code>.",
    ));
    body.push_str(&data("check", &command("check", model, ""), c));
    body
}

/// `undertrained`: the reference set, the scores and the top candidates.
pub fn undertrained(r: &Report, why: Option<&str>) -> String {
    let Some(u) = &r.undertrained else {
        return section(
            "undertrained",
            "Under-trained rows",
            &missing(why.unwrap_or("undertrained did not run")),
        );
    };
    section(
        "undertrained",
        "Under-trained rows",
        &undertrained_body(u, &r.model),
    )
}

fn undertrained_body(u: &UndertrainedReport, model: &str) -> String {
    let reference = &u.reference;
    let mut body = format!(
        "<p>Score: the mean robust z of {} over {} rows; reference (known-untrained) rows: {}. {} reach the strong threshold {:.1}, {} of them outside the reference set.</p>\n",
        esc(&u.indicators.join(", ")),
        count(u.scored as u64),
        count(reference.rows as u64),
        plural(u.strong, "row"),
        u.threshold,
        count(u.strong_outside_reference as u64)
    );
    body.push_str(&figure(
        &undertrained_svg(u),
        "Left, the combined score of every row; right, the best-scored rows by name. The same picture as <code>undertrained --plot</code>.",
    ));
    let rows: Vec<Vec<Cell>> = (u.candidates.iter())
        .map(|c| {
            let f = |v: Option<f32>| v.map_or_else(|| "-".into(), |v| format!("{v:.4}"));
            vec![
                Cell::num(&c.rank.to_string()),
                Cell::num(&c.id.to_string()),
                Cell::html(c.token.as_deref().map_or_else(|| "-".into(), code)),
                Cell::text(token_kind(c.kind)),
                Cell::text(if c.reference { "yes" } else { "" }),
                Cell::text(match c.reachable {
                    Some(true) => "yes",
                    Some(false) => "no",
                    None => "-",
                }),
                Cell::num(&format!("{:.2}", c.score)),
                Cell::num(&f(c.head_cosine)),
                Cell::num(&f(c.embed_norm)),
                Cell::num(&f(c.embed_distance)),
            ]
        })
        .collect();
    if !rows.is_empty() {
        body.push_str(&table(
            "candidates",
            &[
                "rank",
                "id",
                "token",
                "kind",
                "reference",
                "reachable",
                "score",
                "head cosine",
                "embed norm",
                "embed distance",
            ],
            rows,
        ));
    }
    if !u.notes.is_empty() {
        body.push_str("<ul class=\"notes\">\n");
        for n in &u.notes {
            let _ = writeln!(body, "<li>{}</li>", esc(&n.text));
        }
        body.push_str("</ul>\n");
    }
    body.push_str(&data(
        "undertrained",
        &command("undertrained", model, ""),
        u,
    ));
    body
}

/// The map of the embedding.
pub fn map(r: &Report, why: Option<&str>) -> String {
    let Some(m) = &r.map else {
        return section(
            "map",
            "Map of the embedding",
            &missing(why.unwrap_or("no map was made")),
        );
    };
    let mut body = map_body(m);
    if r.info.tokenizer.is_none() {
        body.insert_str(
            0,
            "<p class=\"missing\">No tokenizer: the rows are neither named nor known as special, reserved or padding; only the untrained-looking stand out.</p>\n",
        );
    }
    section("map", "Map of the embedding", &body)
}

fn map_body(m: &MapReport) -> String {
    let settled = if m.within_noise {
        "the second stands out no more than chance would have it, so it is one direction among several of about equal variance".to_string()
    } else {
        format!("found in {} iterations", m.iterations)
    };
    let mut body = format!(
        "<p>{} rows of {} (in evenly spaced runs), centred, on the first two principal components of those rows ({settled}); the rows of note are placed on the same axes. Near each other means alike; a cluster of untrained-looking rows apart from the rest is what untrained rows look like.</p>\n",
        count(m.sample_rows as u64),
        code(&m.matrix)
    );
    body.push_str(&figure(
        &map_svg(m),
        "Special, reserved or unused, padding and untrained-looking rows in their own shapes; a few of them named.",
    ));
    let what = format!(
        "the {} of {}",
        code("map"),
        code("embscope --json report MODEL -o FILE")
    );
    body.push_str(&data("map", &what, m));
    body
}
