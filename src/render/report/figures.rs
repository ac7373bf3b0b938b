//! The page's own pictures: the parameters of the model as stored and
//! under `size`'s what-if flags (stacked bars: embedding, head, the rest),
//! and the map of the embedding's rows (a scatter, the rows of note in
//! their own shapes, a few of them named).

use crate::cmd::size::SizeReport;
use crate::render::count;
use crate::render::svg::{Bar, Bars, Point, Rect, Scatter, Svg};
use crate::report::{Group, MapReport, WhatIf};

/// Most rows of each highlighted group named on the map.
const NAMED: usize = 12;

/// A scenario's name on its bar: what its flags change.
pub fn scenario(w: &WhatIf, stored: &SizeReport) -> String {
    let Some(f) = &w.size.what_if else {
        return w.flags.clone();
    };
    let stored_tied = stored.head.is_none();
    let mut parts = Vec::new();
    if f.tied != stored_tied {
        parts.push(if f.tied { "tied" } else { "untied" }.to_string());
    }
    let rows = stored.embedding_params / f.hidden.max(1);
    if f.vocab != rows {
        parts.push(format!("vocab {}", count(f.vocab)));
    }
    if parts.is_empty() {
        w.flags.clone()
    } else {
        parts.join(", ")
    }
}

/// The bars: parameters of the embedding, the head and the rest, as
/// stored and under each scenario.
pub fn size_svg(stored: &SizeReport, what_if: &[WhatIf]) -> String {
    let rest = |total: u64, e: u64, h: u64| total.saturating_sub(e + h) as f64;
    let mut values: Vec<[f64; 3]> = vec![[
        stored.embedding_params as f64,
        stored.head_params as f64,
        rest(
            stored.total_params,
            stored.embedding_params,
            stored.head_params,
        ),
    ]];
    let mut labels = vec!["as stored".to_string()];
    for w in what_if {
        if let Some(f) = &w.size.what_if {
            values.push([
                f.embedding_params as f64,
                f.head_params as f64,
                rest(f.total_params, f.embedding_params, f.head_params),
            ]);
            labels.push(scenario(w, stored));
        }
    }
    let bars: Vec<Bar> = (labels.iter())
        .zip(&values)
        .map(|(label, v)| Bar { label, values: v })
        .collect();
    let chart = Bars {
        title: "parameters: the vocabulary layers and the rest",
        unit: "parameters",
        bars: &bars,
        parts: &["embedding", "head", "the rest of the model"],
    };
    let height = 110.0 + 44.0 * bars.len() as f64;
    let mut svg = Svg::new(900.0, height + 20.0);
    chart.draw(&mut svg, Rect::new(0.0, 0.0, 900.0, height));
    svg.caption("embscope size, and size with the what-if flags named in the table below");
    svg.finish()
}

/// The groups as the map's legend names them, in [`Group`] order.
const GROUPS: [(Group, &str); 5] = [
    (Group::Row, "sampled rows"),
    (Group::Special, "special"),
    (Group::Reserved, "reserved or unused"),
    (Group::Padding, "padding"),
    (Group::Untrained, "untrained-looking"),
];

/// The map: every point in its group's style, the special rows and the
/// best-scored untrained-looking ones named (a few of each).
pub fn map_svg(m: &MapReport) -> String {
    let named = named(m);
    let points: Vec<Point> = (m.points.iter().enumerate())
        .map(|(i, p)| Point {
            x: f64::from(p.x),
            y: f64::from(p.y),
            label: named
                .contains(&i)
                .then(|| p.token.clone().unwrap_or_else(|| format!("#{}", p.id))),
            group: GROUPS.iter().position(|(g, _)| *g == p.group).unwrap_or(0),
        })
        .collect();
    let groups: Vec<String> = GROUPS.iter().map(|(_, name)| name.to_string()).collect();
    let axis = |k: usize| {
        format!(
            "PC{} ({:.1}% of the sample's variance)",
            k + 1,
            m.variance[k] * 100.0
        )
    };
    let (x_label, y_label) = (axis(0), axis(1));
    let title = format!("rows of {} on two principal components", m.matrix);
    let mut svg = Svg::new(900.0, 680.0);
    Scatter {
        title: &title,
        x_label: &x_label,
        y_label: &y_label,
        points: &points,
        groups: &groups,
        equal_aspect: true,
        dense: true,
    }
    .draw(&mut svg, Rect::new(0.0, 0.0, 900.0, 656.0));
    svg.caption(&format!(
        "embscope report: {} evenly spaced rows and {} rows of note",
        count(m.sample_rows as u64),
        count((m.points.len() - m.sample_rows.min(m.points.len())) as u64)
    ));
    svg.finish()
}

/// The points named: up to [`NAMED`] special ones (in id order), and as
/// many untrained-looking ones, best score first.
fn named(m: &MapReport) -> Vec<usize> {
    let of = |g: Group| (0..m.points.len()).filter(move |&i| m.points[i].group == g);
    let mut special: Vec<usize> = of(Group::Special).collect();
    special.sort_by_key(|&i| m.points[i].id);
    let mut untrained: Vec<usize> = of(Group::Untrained).collect();
    let score = |i: usize| m.points[i].score.unwrap_or(f32::NEG_INFINITY);
    untrained.sort_by(|&a, &b| score(b).total_cmp(&score(a)).then(a.cmp(&b)));
    (special.into_iter().take(NAMED))
        .chain(untrained.into_iter().take(NAMED))
        .collect()
}
