//! Horizontal bars, each a stack of parts (the parameters of a model:
//! embedding, head, the rest), with the parts named in a legend and each
//! bar's total at its end. Parts take viridis colours far apart in
//! lightness, so that they stay apart in grey.

use super::axes::{self, INK, Key, LABEL, TICK, TITLE};
use super::doc::{Anchor, Rect, Stroke, Svg, TextStyle};
use super::palette::viridis;
use super::scale::{Scale, compact};
use super::text;

/// Widest bar label, in pixels.
const MAX_LABEL: f64 = 160.0;
/// Thickest bar, in pixels.
const MAX_BAR: f64 = 34.0;

/// One bar.
#[derive(Debug, Clone)]
pub struct Bar<'a> {
    /// Its name, on the left.
    pub label: &'a str,
    /// The size of each part, in the order of [`Bars::parts`].
    pub values: &'a [f64],
}

/// A chart of stacked horizontal bars.
#[derive(Debug, Clone)]
pub struct Bars<'a> {
    /// Shown above the bars.
    pub title: &'a str,
    /// What the lengths are, with their unit (`parameters`).
    pub unit: &'a str,
    /// The bars, top to bottom.
    pub bars: &'a [Bar<'a>],
    /// The parts' names, in stacking order from the left.
    pub parts: &'a [&'a str],
}

/// The colour of part `k` of `n`: from dark to light.
fn part_color(k: usize, n: usize) -> String {
    viridis(if n <= 1 {
        0.3
    } else {
        0.1 + 0.8 * k as f64 / (n - 1) as f64
    })
}

impl Bars<'_> {
    /// Draws the chart in `area`.
    pub fn draw(&self, svg: &mut Svg, area: Rect) {
        let top = if self.title.is_empty() {
            8.0
        } else {
            TITLE + 16.0
        };
        let label_w = self
            .bars
            .iter()
            .map(|b| text::width(b.label, LABEL))
            .fold(0.0, f64::max)
            .min(MAX_LABEL);
        let legend_h = if self.parts.len() > 1 {
            LABEL + 14.0
        } else {
            0.0
        };
        let plot = area.inset(label_w + 12.0, top + legend_h, 70.0, TICK + LABEL + 26.0);
        axes::title(svg, area, plot.x + plot.w / 2.0, self.title);
        let total = |b: &Bar| b.values.iter().filter(|v| v.is_finite()).sum::<f64>();
        let most = self.bars.iter().map(total).fold(0.0, f64::max);
        let xs = Scale::linear(
            0.0,
            if most > 0.0 { most } else { 1.0 },
            plot.x,
            plot.right(),
        );
        axes::x_grid(svg, plot, &xs, (plot.w / 90.0).max(2.0) as usize);
        let pitch = plot.h / self.bars.len().max(1) as f64;
        let thick = (pitch * 0.7).min(MAX_BAR);
        let n = self.parts.len();
        for (i, bar) in self.bars.iter().enumerate() {
            let y = plot.y + pitch * i as f64 + (pitch - thick) / 2.0;
            let mut at = 0.0;
            for (k, &v) in bar.values.iter().enumerate() {
                if !(v.is_finite() && v > 0.0) {
                    continue;
                }
                let (a, b) = (xs.at(at), xs.at(at + v));
                let part = self.parts.get(k).copied().unwrap_or("");
                let tip = format!("{}, {part}: {}", bar.label, compact(v));
                svg.rect(
                    Rect::new(a, y, b - a, thick),
                    &part_color(k, n),
                    Some(&tip),
                    "segment",
                );
                at += v;
            }
            svg.text(
                plot.x - 6.0,
                y + thick / 2.0 + LABEL * 0.35,
                &text::fit(bar.label, MAX_LABEL, LABEL),
                TextStyle::new(LABEL).anchor(Anchor::End).class("bar-label"),
            );
            svg.text(
                xs.at(at) + 5.0,
                y + thick / 2.0 + TICK * 0.35,
                &compact(at),
                TextStyle::new(TICK).class("total"),
            );
        }
        svg.line(
            (plot.x, plot.y),
            (plot.x, plot.bottom()),
            Stroke::solid(INK, 1.0),
        );
        svg.line(
            (plot.x, plot.bottom()),
            (plot.right(), plot.bottom()),
            Stroke::solid(INK, 1.0),
        );
        svg.text(
            plot.x + plot.w / 2.0,
            plot.bottom() + TICK + LABEL + 16.0,
            self.unit,
            TextStyle::new(LABEL).anchor(Anchor::Middle).class("axis"),
        );
        if n > 1 {
            let colors: Vec<String> = (0..n).map(|k| part_color(k, n)).collect();
            let entries: Vec<(Key, String)> = self
                .parts
                .iter()
                .zip(&colors)
                .map(|(p, c)| (Key::Fill(c), p.to_string()))
                .collect();
            legend_row(svg, plot.x, top + area.y, &entries);
        }
    }
}

/// A legend in one row from `(x, y)` on: a box and a name per part.
fn legend_row(svg: &mut Svg, x: f64, y: f64, entries: &[(Key, String)]) {
    let mut at = x;
    for (key, name) in entries {
        if let Key::Fill(color) = key {
            svg.rect(Rect::new(at, y, 16.0, 10.0), color, None, "");
        }
        svg.text(
            at + 20.0,
            y + 9.0,
            name,
            TextStyle::new(LABEL).class("legend"),
        );
        at += 32.0 + text::width(name, LABEL);
    }
}
