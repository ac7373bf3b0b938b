//! The frame of an x–y chart (title, plot box, grid, ticks and their
//! labels, axis labels) and its legend, so that every chart says what it
//! shows and in what unit the same way. The margins are made from the
//! labels' estimated widths, so no tick label runs into an axis label.

use super::doc::{Anchor, Rect, Stroke, Svg, TextStyle};
use super::palette::Series;
use super::scale::Scale;
use super::text;

/// Font size of chart titles.
pub const TITLE: f64 = 14.0;
/// Font size of axis labels and legends.
pub const LABEL: f64 = 12.0;
/// Font size of tick labels.
pub const TICK: f64 = 11.0;
/// Colour of axes and ticks.
pub const INK: &str = "#444444";
/// Colour of grid lines.
const GRID: &str = "#e4e4e4";

/// One axis of an x–y chart.
#[derive(Debug, Clone)]
pub struct Axis<'a> {
    /// What it shows, with its unit (`L2 norm`, `rows`).
    pub label: &'a str,
    /// Lowest value shown.
    pub lo: f64,
    /// Highest value shown.
    pub hi: f64,
    /// A log scale (counts that span decades).
    pub log: bool,
}

/// The x axis of a chart of horizontal bars: a grid line at each of
/// about `ticks` ticks of `xs` across `plot`, the tick marks under it and
/// their labels.
pub fn x_grid(svg: &mut Svg, plot: Rect, xs: &Scale, ticks: usize) {
    for (v, label) in xs.ticks(ticks) {
        let px = xs.at(v);
        svg.line((px, plot.y), (px, plot.bottom()), Stroke::solid(GRID, 1.0));
        svg.line(
            (px, plot.bottom()),
            (px, plot.bottom() + 4.0),
            Stroke::solid(INK, 1.0),
        );
        svg.text(
            px,
            plot.bottom() + 6.0 + TICK,
            &label,
            TextStyle::new(TICK).anchor(Anchor::Middle).class("tick"),
        );
    }
}

/// Draws `title` (if any) at the top of `area`, centred on `x`.
pub fn title(svg: &mut Svg, area: Rect, x: f64, title: &str) {
    if title.is_empty() {
        return;
    }
    svg.text(
        x,
        area.y + TITLE + 4.0,
        title,
        TextStyle::new(TITLE)
            .anchor(Anchor::Middle)
            .bold()
            .class("title"),
    );
}

/// Draws the frame of an x–y chart in `area`: `title` on top, then the
/// plot box with a grid at the ticks, the ticks labelled, and each axis
/// named (a log axis says so). Returns the plot box and the scales onto it.
pub fn frame(svg: &mut Svg, area: Rect, title: &str, x: &Axis, y: &Axis) -> (Rect, Scale, Scale) {
    let top = if title.is_empty() { 8.0 } else { TITLE + 14.0 };
    let scale = |a: &Axis, from: f64, to: f64| {
        if a.log {
            Scale::log(a.lo, a.hi, from, to)
        } else {
            Scale::linear(a.lo, a.hi, from, to)
        }
    };
    // The y ticks' labels decide the left margin; their values do not
    // depend on the pixels, only their number does.
    let rough_y = scale(y, area.bottom(), area.y + top);
    let y_count = ((area.h - top - 50.0) / 36.0).max(2.0) as usize;
    let widest = rough_y
        .ticks(y_count)
        .iter()
        .map(|(_, l)| text::width(l, TICK))
        .fold(0.0, f64::max);
    let left = widest + 10.0 + LABEL + 10.0;
    let plot = area.inset(left, top, 14.0, TICK + LABEL + 26.0);
    let (xs, ys) = (
        scale(x, plot.x, plot.right()),
        scale(y, plot.bottom(), plot.y),
    );
    self::title(svg, area, plot.x + plot.w / 2.0, title);
    let tick = Stroke::solid(INK, 1.0);
    let x_count = (plot.w / 80.0).max(2.0) as usize;
    for (v, label) in xs.ticks(x_count) {
        let px = xs.at(v);
        svg.line((px, plot.y), (px, plot.bottom()), Stroke::solid(GRID, 1.0));
        svg.line((px, plot.bottom()), (px, plot.bottom() + 4.0), tick);
        svg.text(
            px,
            plot.bottom() + 6.0 + TICK,
            &label,
            TextStyle::new(TICK).anchor(Anchor::Middle).class("tick"),
        );
    }
    for (v, label) in ys.ticks(y_count) {
        let py = ys.at(v);
        svg.line((plot.x, py), (plot.right(), py), Stroke::solid(GRID, 1.0));
        svg.line((plot.x - 4.0, py), (plot.x, py), tick);
        svg.text(
            plot.x - 6.0,
            py + TICK * 0.35,
            &label,
            TextStyle::new(TICK).anchor(Anchor::End).class("tick"),
        );
    }
    svg.outline(plot, tick);
    let named = |a: &Axis| {
        if a.log {
            format!("{} (log scale)", a.label)
        } else {
            a.label.to_string()
        }
    };
    svg.text(
        plot.x + plot.w / 2.0,
        plot.bottom() + TICK + LABEL + 16.0,
        &named(x),
        TextStyle::new(LABEL).anchor(Anchor::Middle).class("axis"),
    );
    let (lx, ly) = (area.x + LABEL + 2.0, plot.y + plot.h / 2.0);
    svg.text(
        lx,
        ly,
        &named(y),
        TextStyle::new(LABEL)
            .anchor(Anchor::Middle)
            .rotate(-90.0)
            .class("axis"),
    );
    (plot, xs, ys)
}

/// What a legend entry shows beside its text.
#[derive(Debug, Clone, Copy)]
pub enum Key<'a> {
    /// A group's mark.
    Mark(Series),
    /// A group's line.
    Line(Series),
    /// A filled box of a colour.
    Fill(&'a str),
}

/// Draws a legend in the top right corner inside `plot`, on white, one
/// entry a line; labels longer than half the plot's width are cut.
pub fn legend(svg: &mut Svg, plot: Rect, entries: &[(Key, String)]) {
    legend_at(svg, plot, entries, false);
}

/// [`legend`] in the top left corner when `left`, else the top right.
pub fn legend_at(svg: &mut Svg, plot: Rect, entries: &[(Key, String)], left: bool) {
    if entries.is_empty() {
        return;
    }
    let line = LABEL + 6.0;
    let max_text = (plot.w / 2.0).max(40.0);
    let labels: Vec<String> = entries
        .iter()
        .map(|(_, l)| text::fit(l, max_text, LABEL))
        .collect();
    let text_w = labels
        .iter()
        .map(|l| text::width(l, LABEL))
        .fold(0.0, f64::max);
    let (w, h) = (text_w + 40.0, line * entries.len() as f64 + 8.0);
    let x = if left {
        plot.x + 6.0
    } else {
        plot.right() - w - 6.0
    };
    let at = Rect::new(x, plot.y + 6.0, w, h);
    svg.rect(at, "#ffffff", None, "legend");
    svg.outline(at, Stroke::solid("#bbbbbb", 1.0));
    for (i, ((key, _), label)) in entries.iter().zip(&labels).enumerate() {
        let cy = at.y + 4.0 + line * (i as f64 + 0.5);
        let kx = at.x + 16.0;
        match key {
            Key::Mark(s) => svg.path(&s.shape.path(kx, cy, 4.5), s.color, None, None, ""),
            Key::Line(s) => svg.line(
                (kx - 10.0, cy),
                (kx + 10.0, cy),
                Stroke {
                    color: s.color,
                    width: 2.0,
                    dash: s.dash,
                },
            ),
            Key::Fill(color) => {
                svg.rect(Rect::new(kx - 8.0, cy - 5.0, 16.0, 10.0), color, None, "")
            }
        }
        svg.text(
            at.x + 32.0,
            cy + LABEL * 0.35,
            label,
            TextStyle::new(LABEL).class("legend"),
        );
    }
}
