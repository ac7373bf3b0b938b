//! Output of `similarity`: the cosines as a table, CSV or JSON, and as a
//! picture: a heatmap in the clustered order beside the queries' map in
//! two principal components, in one SVG.

use std::fmt::Write as _;

use super::svg::{Heatmap, Point, Rect, Scatter, Svg};
use super::{Human, Style, table};
use crate::cmd::similarity::{Item, SimilarityReport};
use crate::{Error, Result};

/// Most queries drawn by `--plot`: 65,536 cells of 4 pixels, a file of
/// about 10 MB; beyond, the picture grows as n² and says no more.
pub const MAX_PLOTTED: usize = 256;

/// Widest query shown as a table's column header, in chars.
const HEADER_CHARS: usize = 14;

/// How a query is named in a table or picture: as given, but `#ID` with
/// its token when there is one.
fn label(item: &Item) -> String {
    match (item.query.starts_with('#'), &item.tokens[..]) {
        (true, [Some(t)]) => format!("{} \"{t}\"", item.query),
        _ => item.query.clone(),
    }
}

/// A cosine to four decimals, `NaN` for none.
fn cell(c: f64) -> String {
    if c.is_nan() {
        "NaN".into()
    } else {
        format!("{c:.4}")
    }
}

/// `s` cut to `n` chars, with `…` when cut.
fn short(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        return s.to_string();
    }
    let mut out: String = s.chars().take(n - 1).collect();
    out.push('…');
    out
}

impl Human for SimilarityReport {
    fn human(&self, style: &Style) -> String {
        let labels: Vec<String> = self.queries.iter().map(label).collect();
        let mut header = vec![String::new()];
        header.extend(labels.iter().map(|l| short(l, HEADER_CHARS)));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let rows = labels
            .iter()
            .zip(&self.cosine)
            .map(|(l, row)| {
                let mut cells = vec![l.clone()];
                cells.extend(row.iter().map(|&c| cell(c)));
                cells
            })
            .collect();
        let right: Vec<usize> = (1..header.len()).collect();
        let mut out = table(&header, &right, rows);
        let _ = writeln!(
            out,
            "{}",
            style.dim(&format!("cosine between rows of `{}`", self.matrix))
        );
        out
    }
}

/// CSV: a square matrix, the queries as given heading the columns and
/// starting the rows (`pandas.read_csv(f, index_col=0)` reads it back).
pub fn similarity_csv(r: &SimilarityReport) -> Result<Vec<u8>> {
    let csv_err = |e: csv::Error| Error::BadInput(format!("cannot write CSV: {e}"));
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = std::iter::once("query").chain(r.queries.iter().map(|q| q.query.as_str()));
    w.write_record(header).map_err(csv_err)?;
    for (q, row) in r.queries.iter().zip(&r.cosine) {
        let fields = std::iter::once(q.query.clone()).chain(row.iter().map(|c| c.to_string()));
        w.write_record(fields).map_err(csv_err)?;
    }
    w.into_inner()
        .map_err(|e| Error::BadInput(format!("cannot write CSV: {e}")))
}

/// The picture: the heatmap of the cosines, the queries in the clustered
/// order, and to its right their map in two principal components.
pub fn similarity_svg(r: &SimilarityReport) -> String {
    let n = r.queries.len();
    let labels: Vec<String> = r.queries.iter().map(label).collect();
    let ordered: Vec<String> = r.order.iter().map(|&i| labels[i].clone()).collect();
    let values: Vec<f64> = r
        .order
        .iter()
        .flat_map(|&i| r.order.iter().map(move |&j| r.cosine[i][j]))
        .collect();
    let heatmap = Heatmap {
        title: "cosine, clustered order",
        rows: &ordered,
        cols: &ordered,
        values: &values,
        range: color_range(&r.cosine),
        value_label: "cosine",
        decimals: 3,
    };
    // Cells of 4 to 40 pixels, a grid of about 560 at most.
    let cell = (560.0 / n.max(1) as f64).clamp(4.0, 40.0);
    let (w, h) = heatmap.size(cell);
    let heat = Rect::new(0.0, 0.0, w, h);
    let side = h.clamp(380.0, 560.0);
    let map = Rect::new(heat.right() + 10.0, 0.0, side, side);
    let mut svg = Svg::new(map.right() + 10.0, h.max(side) + 24.0);
    heatmap.draw(&mut svg, heat);
    let points: Vec<Point> = r
        .queries
        .iter()
        .zip(&r.map.points)
        .zip(&labels)
        .map(|((q, p), l)| Point {
            x: p[0],
            y: p[1],
            label: Some(l.clone()),
            group: if q.terms.len() == 1 && q.ids.len() == 1 {
                1
            } else {
                2
            },
        })
        .collect();
    let axis = |k: usize| {
        format!(
            "PC{} ({:.0}% of variance)",
            k + 1,
            r.map.variance[k] * 100.0
        )
    };
    let (x_label, y_label) = (axis(0), axis(1));
    Scatter {
        title: "map of the unit vectors",
        x_label: &x_label,
        y_label: &y_label,
        points: &points,
        groups: &[
            String::new(),
            "token".to_string(),
            "expression or text".to_string(),
        ],
        equal_aspect: true,
        dense: false,
    }
    .draw(&mut svg, map);
    svg.caption(&format!(
        "embscope similarity: {n} queries, rows of `{}`",
        r.matrix
    ));
    svg.finish()
}

/// The colour scale's ends: the off-diagonal cosines' range rounded out
/// to tenths (a query's cosine with itself, 1, would squeeze the others
/// into a corner of the scale); -1 to 1 when there are none.
fn color_range(c: &[Vec<f64>]) -> (f64, f64) {
    let (lo, hi) = c
        .iter()
        .enumerate()
        .flat_map(|(i, row)| row.iter().enumerate().filter(move |&(j, _)| j != i))
        .map(|(_, &v)| v)
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (-1.0, 1.0);
    }
    let (lo, hi) = ((lo * 10.0).floor() / 10.0, (hi * 10.0).ceil() / 10.0);
    if hi > lo {
        (lo, hi)
    } else {
        (lo - 0.1, hi + 0.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_colour_range_leaves_the_diagonal_out() {
        let c = vec![
            vec![1.0, 0.23, 0.51],
            vec![0.23, 1.0, f64::NAN],
            vec![0.51, f64::NAN, 1.0],
        ];
        assert_eq!(color_range(&c), (0.2, 0.6));
        assert_eq!(color_range(&[vec![1.0]]), (-1.0, 1.0));
        assert_eq!(color_range(&[vec![1.0, 0.5], vec![0.5, 1.0]]), (0.4, 0.6));
    }
}
