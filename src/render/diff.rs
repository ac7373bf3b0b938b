//! Text for `diff`: a summary of a few lines (same or different; the
//! tokens; each matrix's shape, dtype and rows by outcome; the tie), then
//! for each matrix the distributions of the changed rows as block charts,
//! the rows that moved most, the rows added with their verdicts and the
//! rows removed, then the tokens added, removed and renumbered. And its
//! picture (`--plot`, and the report's page): per matrix, the changed
//! rows' cosine and relative change as histograms, the rows that moved
//! most by name, and the added rows by verdict.

use std::fmt::Write;

use super::svg::{self, Ranking, Rect, Svg};
use super::undertrained::sparkline;
use super::{Human, Style, count, table};
use crate::cmd::diff::DiffReport;
use crate::cmd::diff::{
    Added, Distribution, Init, InitCounts, MatrixDiff, MatrixSide, TieChange, Token, TokensDiff,
};
use crate::roles::TieStatus;

/// Items of a list shown in text; `--json` has them all.
const SHOWN: usize = 10;

/// A label padded to the summary's column.
fn label(style: &Style, s: &str) -> String {
    style.bold(&format!("{s:<10}"))
}

/// A token as text: quoted, or `-` for a row no token reaches.
fn token(t: &Option<String>) -> String {
    t.as_deref()
        .map_or_else(|| "-".into(), |t| format!("\"{t}\""))
}

fn tie(s: TieStatus) -> &'static str {
    match s {
        TieStatus::Tied => "tied",
        TieStatus::TiedHeadStored => "tied, head stored",
        TieStatus::Untied => "untied",
        TieStatus::UntiedHeadMissing => "untied, head missing",
        TieStatus::NoHead => "no head",
        TieStatus::VocabOnly => "no tensors",
    }
}

fn shape(m: &MatrixSide) -> String {
    format!("[{}, {}] {}", m.rows, m.cols, m.dtype)
}

/// `[302, 64] BF16 → [307, 64] F32`, or one side when both are alike.
fn shapes(d: &MatrixDiff) -> String {
    let (b, t) = (shape(&d.base), shape(&d.tuned));
    if b == t { b } else { format!("{b} → {t}") }
}

/// The verdicts with a count, in the order they are tried.
fn verdicts(c: &InitCounts) -> String {
    Init::ALL
        .iter()
        .map(|&i| {
            let n = match i {
                Init::Zeros => c.zeros,
                Init::Copy => c.copy,
                Init::Mean => c.mean,
                Init::Random => c.random,
                Init::Trained => c.trained,
            };
            (n, i.name())
        })
        .filter(|&(n, _)| n > 0)
        .map(|(n, name)| format!("{} {name}", count(n as u64)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// One matrix on a line: shape, dtype and rows by outcome.
fn summary(d: &MatrixDiff) -> String {
    if d.same_as_embedding {
        return "tied to the embedding on both sides: as the embedding".to_string();
    }
    let mut parts = vec![
        format!("{} identical", count(d.identical as u64)),
        format!("{} changed", count(d.changed as u64)),
    ];
    if !d.added.is_empty() {
        parts.push(format!(
            "{} added ({})",
            count(d.added.len() as u64),
            verdicts(&d.init)
        ));
    }
    if !d.removed.is_empty() {
        parts.push(format!("{} removed", count(d.removed.len() as u64)));
    }
    if d.renumbered > 0 {
        parts.push(format!("{} renumbered", count(d.renumbered as u64)));
    }
    format!("{}: {}", shapes(d), parts.join(", "))
}

fn tokens_summary(t: &TokensDiff) -> String {
    if !t.compared {
        return "not compared".to_string();
    }
    let mut line = format!(
        "{} → {} entries: {} added, {} removed, {} renumbered",
        count(t.base_size as u64),
        count(t.tuned_size as u64),
        count(t.added.len() as u64),
        count(t.removed.len() as u64),
        count(t.renumbered.len() as u64)
    );
    if !t.special_moved.is_empty() {
        let _ = write!(
            line,
            "; special ids moved: {}",
            t.special_moved
                .iter()
                .map(|s| s.role.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some([b, t]) = &t.kind {
        let _ = write!(line, "; tokenizer {b} → {t}");
    }
    if let Some([b, t]) = &t.normalizer {
        let _ = write!(line, "; normaliser {b} → {t}");
    }
    line
}

fn tie_summary(t: &TieChange) -> String {
    if t.base == t.tuned {
        format!("{} on both sides", tie(t.base))
    } else {
        format!("{} → {}", tie(t.base), tie(t.tuned))
    }
}

/// A distribution on one line: its range and median, and a block chart.
fn distribution(out: &mut String, style: &Style, name: &str, d: &Distribution) {
    let scale = if d.scale == "log10" {
        ", log scale"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "  {name:<16} {:.4} {} {:.4}  {}",
        d.min,
        sparkline(&d.counts),
        d.max,
        style.dim(&format!("median {:.4}{scale}", d.median))
    );
}

/// A list cut to [`SHOWN`] items, with how many more `--json` has.
fn more(out: &mut String, style: &Style, total: usize) {
    if total > SHOWN {
        let _ = writeln!(
            out,
            "  {}",
            style.dim(&format!(
                "… {} more in --json",
                count((total - SHOWN) as u64)
            ))
        );
    }
}

/// Indents each line of `text` by two spaces.
fn indented(text: &str) -> String {
    text.lines().map(|l| format!("  {l}\n")).collect()
}

/// The details of one matrix: distributions, the rows that moved most,
/// the rows added and removed.
fn details(out: &mut String, style: &Style, name: &str, d: &MatrixDiff) {
    if d.same_as_embedding || !d.differs() {
        return;
    }
    let tensors = match (&d.base.tensor, &d.tuned.tensor) {
        (b, t) if b == t => format!("`{b}`"),
        (b, t) => format!("`{b}` → `{t}`"),
    };
    let _ = writeln!(out, "\n{}  {tensors}", style.bold(name));
    if let Some(t) = &d.tolerance {
        let _ = writeln!(out, "  {}", style.dim(&t.why));
    }
    for (what, dist) in [
        ("cosine", &d.cosine),
        ("relative change", &d.relative_change),
    ] {
        if let Some(dist) = dist {
            distribution(out, style, what, dist);
        }
    }
    if !d.top_changed.is_empty() {
        let rows = d
            .top_changed
            .iter()
            .map(|c| {
                let id = match c.base_id == c.id {
                    true => c.id.to_string(),
                    false => format!("{} (base {})", c.id, c.base_id),
                };
                let change = c
                    .relative_change
                    .map_or_else(|| "from 0".into(), |r| format!("{r:.4}"));
                vec![id, token(&c.token), format!("{:.4}", c.cosine), change]
            })
            .collect();
        let head = ["changed", "token", "cosine", "change"];
        out.push_str(&indented(&table(&head, &[0, 2, 3], rows)));
    }
    if !d.added.is_empty() {
        added(out, style, &d.added);
        if d.init_basis.as_ref().is_some_and(|b| !b.copies_sought) {
            let _ = writeln!(
                out,
                "  {}",
                style.dim("copies are not looked for among this many rounded rows: a copied row shows as mean, random or trained")
            );
        }
    }
    if !d.removed.is_empty() {
        let list: Vec<String> = d
            .removed
            .iter()
            .take(SHOWN)
            .map(|r| format!("{} {}", r.id, token(&r.token)))
            .collect();
        let _ = writeln!(out, "  removed  {}", list.join(", "));
        more(out, style, d.removed.len());
    }
}

/// The added rows: each with its verdict and figures when there are few;
/// else runs of consecutive rows of one verdict, so that every kind shows.
fn added(out: &mut String, style: &Style, added: &[Added]) {
    if added.len() > SHOWN {
        let runs = added.chunk_by(|a, b| a.init == b.init && b.id == a.id + 1);
        let total = runs.clone().count();
        let rows = runs
            .take(SHOWN)
            .map(|run| {
                let (first, last) = (&run[0], &run[run.len() - 1]);
                let (ids, tokens) = match run.len() {
                    1 => (first.id.to_string(), token(&first.token)),
                    _ => (
                        format!("{}-{}", first.id, last.id),
                        format!("{} … {}", token(&first.token), token(&last.token)),
                    ),
                };
                vec![
                    ids,
                    tokens,
                    first.init.name().to_string(),
                    count(run.len() as u64),
                ]
            })
            .collect();
        let head = ["added", "tokens", "init", "rows"];
        out.push_str(&indented(&table(&head, &[0, 3], rows)));
        more(out, style, total);
        return;
    }
    let rows = added
        .iter()
        .map(|a| {
            let init = match (a.copy_of, &a.copy_of_token) {
                (Some(b), Some(t)) => format!("copy of {b} \"{t}\""),
                (Some(b), None) => format!("copy of {b}"),
                _ => a.init.name().to_string(),
            };
            let fig = |x: Option<f32>| x.map_or_else(|| "-".into(), |x| format!("{x:.4}"));
            vec![
                a.id.to_string(),
                token(&a.token),
                init,
                format!("{:.4}", a.norm),
                fig(a.cosine_to_mean),
            ]
        })
        .collect();
    let head = ["added", "token", "init", "norm", "cos to mean"];
    out.push_str(&indented(&table(&head, &[0, 3, 4], rows)));
}

/// The tokens added, removed and renumbered, and the special-token ids
/// that moved.
fn token_details(out: &mut String, style: &Style, t: &TokensDiff) {
    if !t.compared || !t.differs() {
        return;
    }
    let _ = writeln!(out, "\n{}", style.bold("tokens"));
    let mut list = |what: &str, items: Vec<String>| {
        if items.is_empty() {
            return;
        }
        let total = items.len();
        let shown: Vec<String> = items.into_iter().take(SHOWN).collect();
        let _ = writeln!(out, "  {what:<11} {}", shown.join(", "));
        more(out, style, total);
    };
    list("added", tokens(&t.added));
    list("removed", tokens(&t.removed));
    list(
        "renumbered",
        t.renumbered
            .iter()
            .map(|r| format!("\"{}\" {} → {}", r.token, r.base_id, r.tuned_id))
            .collect(),
    );
    list("special", special_moves(t));
}

/// Tokens as items: each alone when there are few, else runs of
/// consecutive ids of one kind (`128256-128511 "<|a|>" … "<|z|>" (256,
/// special)`).
fn tokens(list: &[Token]) -> Vec<String> {
    let special = |s: bool| if s { " (special)" } else { "" };
    if list.len() <= SHOWN {
        return list
            .iter()
            .map(|t| format!("{} \"{}\"{}", t.id, t.token, special(t.special)))
            .collect();
    }
    list.chunk_by(|a, b| a.special == b.special && b.id == a.id + 1)
        .map(|run| match run {
            [one] => format!("{} \"{}\"{}", one.id, one.token, special(one.special)),
            [first, .., last] => format!(
                "{}-{} \"{}\" … \"{}\" ({}{})",
                first.id,
                last.id,
                first.token,
                last.token,
                count(run.len() as u64),
                if first.special { ", special" } else { "" }
            ),
            [] => unreachable!("runs are not empty"),
        })
        .collect()
}

/// The special-token roles that moved, one item each.
fn special_moves(t: &TokensDiff) -> Vec<String> {
    let ids = |v: &[i64]| match v {
        [] => "none".to_string(),
        v => v.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
    };
    t.special_moved
        .iter()
        .map(|s| {
            let names: String = s
                .tuned_tokens
                .iter()
                .flatten()
                .map(|t| format!(" \"{t}\""))
                .collect();
            format!("{} {} → {}{names}", s.role, ids(&s.base), ids(&s.tuned))
        })
        .collect()
}

impl Human for DiffReport {
    fn human(&self, style: &Style) -> String {
        let mut out = String::new();
        let verdict = if self.same { "same" } else { "different" };
        let _ = writeln!(
            out,
            "{}  {} → {}: {verdict}",
            style.bold("diff"),
            self.base,
            self.tuned
        );
        let _ = writeln!(
            out,
            "{} {}",
            label(style, "tokens"),
            tokens_summary(&self.tokens)
        );
        for (name, d) in [("embedding", &self.embedding), ("head", &self.head)] {
            if let Some(d) = d {
                let _ = writeln!(out, "{} {}", label(style, name), summary(d));
            }
        }
        // The tie concerns the head: said when it was compared, or changed.
        if self.head.is_some() || self.tie.base != self.tie.tuned {
            let _ = writeln!(out, "{} {}", label(style, "tie"), tie_summary(&self.tie));
        }
        for (name, d) in [("embedding", &self.embedding), ("head", &self.head)] {
            if let Some(d) = d {
                details(&mut out, style, name, d);
            }
        }
        token_details(&mut out, style, &self.tokens);
        out
    }
}

/// A panel of the picture, in pixels.
const PANEL: (f64, f64) = (560.0, 320.0);

/// The picture: for each matrix compared (the head apart only when it is
/// not the embedding again), a row of the changed rows' cosine and
/// relative change as histograms (log counts where they span decades),
/// then a row of the rows that moved most by name and the added rows by
/// verdict.
pub fn diff_svg(r: &DiffReport) -> String {
    let shown: Vec<(&str, &MatrixDiff)> = [("embedding", &r.embedding), ("head", &r.head)]
        .into_iter()
        .filter_map(|(role, d)| Some((role, d.as_ref()?)))
        .filter(|(_, d)| !d.same_as_embedding)
        .collect();
    let (w, h) = PANEL;
    let below: Vec<f64> = shown.iter().map(|(_, d)| below_height(d)).collect();
    let height: f64 = below.iter().map(|b| h + b + 10.0).sum::<f64>() + 24.0;
    let mut canvas = Svg::new(2.0 * w + 10.0, height.max(80.0));
    let mut y = 0.0;
    for ((role, d), below) in shown.iter().zip(&below) {
        let panels = [
            ("cosine", &d.cosine),
            ("relative change", &d.relative_change),
        ];
        for (k, (what, dist)) in panels.into_iter().enumerate() {
            let area = Rect::new(k as f64 * (w + 10.0), y, w, h);
            distribution_panel(&mut canvas, area, role, what, dist.as_ref());
        }
        y += h;
        if *below > 0.0 {
            moved_and_added(&mut canvas, Rect::new(0.0, y, 2.0 * w + 10.0, *below), d);
        }
        y += below + 10.0;
    }
    if shown.is_empty() {
        canvas.empty_panel(
            Rect::new(0.0, 0.0, 2.0 * w + 10.0, 56.0),
            "no matrix compared",
        );
    }
    canvas.caption(&format!("embscope diff: {} against {}", r.tuned, r.base));
    canvas.finish()
}

/// The rows that moved most, named, by relative change.
fn moved(d: &MatrixDiff) -> Vec<(String, f64)> {
    (d.top_changed.iter())
        .filter_map(|c| {
            let name = match &c.token {
                Some(t) => format!("{} \"{t}\"", c.id),
                None => c.id.to_string(),
            };
            Some((name, c.relative_change?))
        })
        .collect()
}

/// The added rows by verdict, the verdicts no row has left out.
fn by_init(d: &MatrixDiff) -> Vec<(String, f64)> {
    let i = &d.init;
    [
        ("zeros", i.zeros),
        ("copy", i.copy),
        ("mean", i.mean),
        ("random", i.random),
        ("trained", i.trained),
    ]
    .into_iter()
    .filter(|&(_, n)| n > 0)
    .map(|(name, n)| (name.to_string(), n as f64))
    .collect()
}

/// The height of the row below a matrix's histograms (0 when it has
/// neither moved nor added rows to show).
fn below_height(d: &MatrixDiff) -> f64 {
    let (m, a) = (moved(d), by_init(d));
    if m.is_empty() && a.is_empty() {
        return 0.0;
    }
    let height = |items: &[(String, f64)]| {
        Ranking {
            title: "",
            value_label: "",
            items,
            cut: None,
            decimals: 0,
        }
        .height()
    };
    height(&m).max(height(&a))
}

/// The rows that moved most (left) and the added rows by verdict (right)
/// of `d`, in `area`.
fn moved_and_added(canvas: &mut Svg, area: Rect, d: &MatrixDiff) {
    let half = (area.w - 10.0) / 2.0;
    let (m, a) = (moved(d), by_init(d));
    let left = Rect::new(area.x, area.y, half, area.h);
    let right = Rect::new(area.x + half + 10.0, area.y, half, area.h);
    if m.is_empty() {
        canvas.empty_panel(left, "no changed rows");
    } else {
        let title = format!("top {} moved rows of {}", m.len(), d.tuned.tensor);
        Ranking {
            title: &title,
            value_label: "relative change |tuned − base| / |base|",
            items: &m,
            cut: None,
            decimals: 3,
        }
        .draw(canvas, left);
    }
    if a.is_empty() {
        canvas.empty_panel(right, "no added rows");
    } else {
        let title = format!("{} added rows by init", count(d.added.len() as u64));
        Ranking {
            title: &title,
            value_label: "rows",
            items: &a,
            cut: None,
            decimals: 0,
        }
        .draw(canvas, right);
    }
}

/// The histogram of one distribution of the changed rows of `matrix`, on
/// the log10 of the values where its bins are so spaced.
fn distribution_panel(
    canvas: &mut Svg,
    area: Rect,
    matrix: &str,
    what: &str,
    d: Option<&Distribution>,
) {
    let Some(d) = d else {
        canvas.empty_panel(area, &format!("{matrix}: no changed rows"));
        return;
    };
    let log = d.scale == "log10" && d.min > 0.0 && d.max > 0.0;
    let (min, max, x_label) = if log {
        (d.min.log10(), d.max.log10(), format!("log10 of {what}"))
    } else {
        (d.min, d.max, what.to_string())
    };
    let (min, max) = if max > min {
        (min, max)
    } else {
        (min - 0.5, min + 0.5)
    };
    let title = format!("{what}, {matrix} (median {:.4})", d.median);
    svg::Histogram {
        title: &title,
        x_label: &x_label,
        y_label: "changed rows",
        min,
        max,
        counts: &d.counts,
        subsets: &[],
        cuts: &[],
    }
    .draw(canvas, area);
}
