//! A scatter plot: points in groups, the base group in light grey and each
//! highlighted group in a colour and shape of its own (with a legend),
//! labels beside the points where they fit. Labels are placed greedily,
//! highlighted points first, on the first side (right, left, above, below, then the corners)
//! where they cover no other label or point; the ones that fit nowhere are
//! left out, and the picture says how many.

use super::axes::{self, Axis, Key, TICK};
use super::doc::{Anchor, Rect, Svg, TextStyle};
use super::palette::{BASE, Series, series};
use super::text;

/// Radius of a mark, in pixels.
const MARK: f64 = 4.0;
/// Radius of a base-group mark of a dense plot.
const DENSE_MARK: f64 = 1.6;
/// Widest label, in pixels.
const MAX_LABEL: f64 = 120.0;

/// One point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// Horizontal value.
    pub x: f64,
    /// Vertical value.
    pub y: f64,
    /// Text beside it, if any.
    pub label: Option<String>,
    /// Its group: 0 the base group, 1 and on the highlighted ones.
    pub group: usize,
}

/// A scatter plot.
#[derive(Debug, Clone)]
pub struct Scatter<'a> {
    /// Shown above the plot.
    pub title: &'a str,
    /// The horizontal axis, with its unit.
    pub x_label: &'a str,
    /// The vertical axis, with its unit.
    pub y_label: &'a str,
    /// The points; those with a value that is not finite are left out.
    pub points: &'a [Point],
    /// The groups' names for the legend, the base group first; a group
    /// without points is not listed.
    pub groups: &'a [String],
    /// One unit is as long across as up (a map, where distances matter).
    pub equal_aspect: bool,
    /// Thousands of points: the base group's marks are drawn small, and
    /// labels may cover them (else no label would find room in a cloud).
    pub dense: bool,
}

/// The style of group `g`.
fn style(g: usize) -> Series {
    if g == 0 { BASE } else { series(g - 1) }
}

impl Scatter<'_> {
    /// Draws the plot in `area`.
    pub fn draw(&self, svg: &mut Svg, area: Rect) {
        let shown: Vec<&Point> = self
            .points
            .iter()
            .filter(|p| p.x.is_finite() && p.y.is_finite())
            .collect();
        let (x, y) = self.axes(&shown, area);
        let (plot, xs, ys) = axes::frame(svg, area, self.title, &x, &y);
        let at = |p: &Point| (xs.at(p.x), ys.at(p.y));
        // Base points first, so highlighted ones lie on top.
        let mut order: Vec<&Point> = shown.clone();
        order.sort_by_key(|p| p.group);
        let radius = |p: &Point| {
            if self.dense && p.group == 0 {
                DENSE_MARK
            } else {
                MARK
            }
        };
        for p in &order {
            let (px, py) = at(p);
            let s = style(p.group);
            svg.path(
                &s.shape.path(px, py, radius(p)),
                s.color,
                None,
                p.label.as_deref(),
                "point",
            );
        }
        // The marks a label must not cover.
        let marks: Vec<Option<Rect>> = order
            .iter()
            .map(|p| {
                let (px, py) = at(p);
                (radius(p) == MARK).then(|| Rect::new(px - MARK, py - MARK, 2.0 * MARK, 2.0 * MARK))
            })
            .collect();
        // Highlighted points' labels first: they matter most.
        let mut placed: Vec<Rect> = Vec::new();
        let mut hidden = 0;
        for (k, p) in order.iter().enumerate().rev() {
            let Some(label) = &p.label else { continue };
            let label = text::fit(label, MAX_LABEL, TICK);
            let (px, py) = at(p);
            let spot = sides(px, py, text::width(&label, TICK))
                .into_iter()
                .find(|(b, _)| {
                    plot.contains(b)
                        && !placed.iter().any(|o| o.overlaps(b))
                        && !marks
                            .iter()
                            .enumerate()
                            .any(|(i, m)| i != k && m.is_some_and(|m| m.overlaps(b)))
                });
            match spot {
                Some((b, anchor)) => {
                    let x = match anchor {
                        Anchor::Start => b.x,
                        Anchor::Middle => b.x + b.w / 2.0,
                        Anchor::End => b.right(),
                    };
                    svg.text(
                        x,
                        b.bottom() - 3.0,
                        &label,
                        TextStyle::new(TICK).anchor(anchor).class("point-label"),
                    );
                    placed.push(b);
                }
                None => hidden += 1,
            }
        }
        if hidden > 0 {
            let note = format!("{hidden} label(s) left out where they would overlap");
            svg.text(
                plot.x + 4.0,
                plot.bottom() - 5.0,
                &note,
                TextStyle::new(TICK).fill("#666666").class("note"),
            );
        }
        let present = |g: usize| shown.iter().any(|p| p.group == g);
        let entries: Vec<(Key, String)> = self
            .groups
            .iter()
            .enumerate()
            .filter(|&(g, _)| present(g))
            .map(|(g, name)| (Key::Mark(style(g)), name.clone()))
            .collect();
        if entries.len() > 1 {
            axes::legend(svg, plot, &entries);
        }
    }

    /// The axes around the points, padded so marks and labels stay inside;
    /// for an equal aspect, the shorter side widened to the plot's shape.
    fn axes(&self, shown: &[&Point], area: Rect) -> (Axis<'_>, Axis<'_>) {
        let span = |f: fn(&Point) -> f64| {
            shown
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
                    (lo.min(f(p)), hi.max(f(p)))
                })
        };
        let (mut x, mut y) = (span(|p| p.x), span(|p| p.y));
        for r in [&mut x, &mut y] {
            if !r.0.is_finite() {
                *r = (-1.0, 1.0);
            }
            let pad = ((r.1 - r.0) * 0.12).max(1e-9);
            *r = (r.0 - pad, r.1 + pad);
        }
        if self.equal_aspect {
            // The plot box the frame will make, near enough: margins of
            // about 80 pixels across and 78 up.
            let (w, h) = ((area.w - 80.0).max(1.0), (area.h - 78.0).max(1.0));
            let per_px = ((x.1 - x.0) / w).max((y.1 - y.0) / h);
            let widen = |r: (f64, f64), px: f64| {
                let mid = (r.0 + r.1) / 2.0;
                (mid - per_px * px / 2.0, mid + per_px * px / 2.0)
            };
            (x, y) = (widen(x, w), widen(y, h));
        }
        let axis = |label, (lo, hi): (f64, f64)| Axis {
            label,
            lo,
            hi,
            log: false,
        };
        (axis(self.x_label, x), axis(self.y_label, y))
    }
}

/// The places a label `w` pixels wide may take beside a mark at `(x, y)`:
/// its box and how the text is anchored, in the order tried (the sides,
/// then the corners).
fn sides(x: f64, y: f64, w: f64) -> [(Rect, Anchor); 8] {
    let h = TICK + 3.0;
    let gap = MARK + 3.0;
    let (right, left) = (x + gap, x - gap - w);
    let (above, below) = (y - gap - h, y + gap);
    [
        (Rect::new(right, y - h / 2.0, w, h), Anchor::Start),
        (Rect::new(left, y - h / 2.0, w, h), Anchor::End),
        (Rect::new(x - w / 2.0, above, w, h), Anchor::Middle),
        (Rect::new(x - w / 2.0, below, w, h), Anchor::Middle),
        (Rect::new(x + 2.0, above + 3.0, w, h), Anchor::Start),
        (Rect::new(x + 2.0, below - 3.0, w, h), Anchor::Start),
        (Rect::new(x - 2.0 - w, above + 3.0, w, h), Anchor::End),
        (Rect::new(x - 2.0 - w, below - 3.0, w, h), Anchor::End),
    ]
}
