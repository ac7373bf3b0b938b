//! The page's fine-tune section, from `diff BASE MODEL`: what changed in
//! the tokenizer and in each matrix, its picture (the same as `diff
//! --plot`), the added rows with their init verdicts, the rows that moved
//! most, and the JSON.

use std::fmt::Write as _;

use super::html::{Cell, code, esc, figure, table};
use super::sections::{command, data, section};
use crate::cmd::diff::{DiffReport, MatrixDiff};
use crate::render::diff::diff_svg;
use crate::render::{count, plural};

/// Added rows listed per matrix, at most; the JSON has them all.
const LISTED: usize = 50;

/// The section, when the page was asked for a base.
pub fn fine_tune(d: &DiffReport) -> String {
    let t = &d.tokens;
    let mut body = format!(
        "<p>{} against its base {}: {}. Rows paired by {}.</p>\n",
        code(&d.tuned),
        code(&d.base),
        if d.same {
            "the vocabulary layers and the tokenizer are the same"
        } else {
            "they differ"
        },
        if d.paired_by == "token" {
            "token text"
        } else {
            "id"
        },
    );
    if t.compared {
        let _ = writeln!(
            body,
            "<p>Tokenizer: {} in the base, {} in the fine-tune; {} added, {} removed, {} renumbered.</p>",
            count(t.base_size as u64),
            count(t.tuned_size as u64),
            count(t.added.len() as u64),
            count(t.removed.len() as u64),
            count(t.renumbered.len() as u64)
        );
    }
    let matrices: Vec<(&str, &MatrixDiff)> = [("embedding", &d.embedding), ("head", &d.head)]
        .into_iter()
        .filter_map(|(role, m)| Some((role, m.as_ref()?)))
        .collect();
    let rows: Vec<Vec<Cell>> = (matrices.iter())
        .map(|(role, m)| {
            vec![
                Cell::text(role),
                Cell::html(code(&m.tuned.tensor)),
                Cell::num(&count(m.compared as u64)),
                Cell::num(&count(m.identical as u64)),
                Cell::num(&count(m.changed as u64)),
                Cell::num(&count(m.added.len() as u64)),
                Cell::num(&count(m.removed.len() as u64)),
            ]
        })
        .collect();
    if !rows.is_empty() {
        body.push_str(&table(
            "diff",
            &[
                "matrix",
                "tensor",
                "pairs",
                "identical",
                "changed",
                "added",
                "removed",
            ],
            rows,
        ));
    }
    for n in &d.notes {
        let _ = writeln!(body, "<p class=\"note\">{}</p>", esc(n));
    }
    body.push_str(&figure(
        &diff_svg(d),
        "Per matrix: the cosine of each changed row with its base row, its relative change (log10 where the changes span decades), the rows that moved most, and the added rows by how they were initialised. The same picture as <code>diff --plot</code>.",
    ));
    for (role, m) in &matrices {
        if m.same_as_embedding || m.added.is_empty() {
            continue;
        }
        let _ = writeln!(
            body,
            "<p>Rows added to the {role}{}:</p>",
            match m.added.len() {
                n if n > LISTED => format!(" (the first {LISTED} of {})", count(n as u64)),
                _ => String::new(),
            }
        );
        let rows: Vec<Vec<Cell>> = (m.added.iter().take(LISTED))
            .map(|a| {
                let f = |v: Option<f32>| v.map_or_else(|| "-".into(), |v| format!("{v:.4}"));
                vec![
                    Cell::num(&a.id.to_string()),
                    Cell::html(a.token.as_deref().map_or_else(|| "-".into(), code)),
                    Cell::text(a.init.name()),
                    Cell::num(&format!("{:.4}", a.norm)),
                    Cell::num(&f(a.cosine_to_mean)),
                    Cell::num(&f(a.distance_to_mean)),
                ]
            })
            .collect();
        body.push_str(&table(
            "added",
            &[
                "id",
                "token",
                "init",
                "norm",
                "cosine to base mean",
                "distance to base mean",
            ],
            rows,
        ));
    }
    let what = command("diff", &d.base, &super::html::shell_word(&d.tuned));
    body.push_str(&data("diff", &what, d));
    let heading = format!(
        "Fine-tune: {}",
        plural(
            matrices.iter().map(|(_, m)| m.changed).max().unwrap_or(0),
            "changed row"
        )
    );
    section("diff", &heading, &body)
}
