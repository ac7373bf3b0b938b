//! A heatmap: a grid of values in viridis, the rows labelled on the left
//! and the columns below (at 45°), a colour bar with its scale on the
//! right. Labels are cut to a width and thinned to every n-th when the
//! cells are smaller than the text; each cell names its row, column and
//! value on hover, and prints its value when there is room.

use super::axes::{self, INK, LABEL, TICK, TITLE};
use super::doc::{Anchor, Rect, Stroke, Svg, TextStyle};
use super::palette::{dark, viridis};
use super::scale::Scale;
use super::text;

/// Widest row or column label, in pixels.
const MAX_LABEL: f64 = 130.0;
/// Largest cell side, in pixels.
const MAX_CELL: f64 = 40.0;
/// Smallest cell side on which the value is printed.
const VALUE_CELL: f64 = 34.0;
/// Room on the right for the colour bar, its ticks and its label.
const BAR_ROOM: f64 = 84.0;
/// Steps of the colour bar.
const BAR_STEPS: usize = 48;

/// A heatmap of `rows.len() × cols.len()` values.
#[derive(Debug, Clone)]
pub struct Heatmap<'a> {
    /// Shown above the grid.
    pub title: &'a str,
    /// Row labels, top to bottom.
    pub rows: &'a [String],
    /// Column labels, left to right.
    pub cols: &'a [String],
    /// The values, row after row; NaN is drawn blank.
    pub values: &'a [f64],
    /// The values at the two ends of the colour scale (values beyond take
    /// the end colours).
    pub range: (f64, f64),
    /// What the values are (`cosine`), beside the colour bar.
    pub value_label: &'a str,
    /// Decimals of the values printed in cells and tooltips.
    pub decimals: usize,
}

impl Heatmap<'_> {
    /// The margins around the grid: left (row labels), top (title),
    /// right (colour bar) and below (column labels at 45°).
    fn margins(&self) -> [f64; 4] {
        let label_w = |labels: &[String]| {
            labels
                .iter()
                .map(|l| text::width(l, TICK))
                .fold(0.0, f64::max)
                .min(MAX_LABEL)
        };
        let top = if self.title.is_empty() {
            8.0
        } else {
            TITLE + 16.0
        };
        [
            label_w(self.rows) + 14.0,
            top,
            BAR_ROOM,
            label_w(self.cols) * 0.71 + TICK + 14.0,
        ]
    }

    /// The width and height the heatmap takes with cells of `cell` pixels.
    pub fn size(&self, cell: f64) -> (f64, f64) {
        let [left, top, right, below] = self.margins();
        (
            left + right + cell * self.cols.len() as f64,
            top + below + cell * self.rows.len() as f64,
        )
    }

    /// Draws the heatmap in `area`, its cells as large as fit (up to 40
    /// pixels).
    pub fn draw(&self, svg: &mut Svg, area: Rect) {
        let (n, m) = (self.rows.len(), self.cols.len());
        let [left, top, right, below] = self.margins();
        let room = area.inset(left, top, right, below);
        let cell = (room.w / m.max(1) as f64)
            .min(room.h / n.max(1) as f64)
            .min(MAX_CELL);
        let grid = Rect::new(room.x, room.y, cell * m as f64, cell * n as f64);
        axes::title(svg, area, grid.x + grid.w / 2.0, self.title);
        let (lo, hi) = self.range;
        let t = |v: f64| (v - lo) / (hi - lo);
        let d = self.decimals;
        for (i, row) in self.rows.iter().enumerate() {
            for (j, col) in self.cols.iter().enumerate() {
                let v = self.values.get(i * m + j).copied().unwrap_or(f64::NAN);
                let r = Rect::new(
                    grid.x + j as f64 * cell,
                    grid.y + i as f64 * cell,
                    cell,
                    cell,
                );
                let (fill, tip) = if v.is_nan() {
                    (
                        "#ffffff".to_string(),
                        format!("{row} × {col}: not a number"),
                    )
                } else {
                    (viridis(t(v)), format!("{row} × {col}: {v:.d$}"))
                };
                svg.rect(r, &fill, Some(&tip), "cell");
                if cell >= VALUE_CELL && !v.is_nan() {
                    let ink = if dark(t(v)) { "#ffffff" } else { "#000000" };
                    svg.text(
                        r.x + cell / 2.0,
                        r.y + cell / 2.0 + TICK * 0.35,
                        &format!("{v:.d$}"),
                        TextStyle::new(TICK)
                            .anchor(Anchor::Middle)
                            .fill(ink)
                            .class("value"),
                    );
                }
            }
        }
        svg.outline(grid, Stroke::solid(INK, 1.0));
        let row_step = text::thin_step(cell, TICK * 1.15);
        for (i, row) in self.rows.iter().enumerate().step_by(row_step) {
            svg.text(
                grid.x - 5.0,
                grid.y + (i as f64 + 0.5) * cell + TICK * 0.35,
                &text::fit(row, MAX_LABEL, TICK),
                TextStyle::new(TICK).anchor(Anchor::End).class("row-label"),
            );
        }
        // Labels at 45° stand `cell × sin 45°` apart, across their lines.
        let col_step = text::thin_step(cell * 0.71, TICK * 1.15);
        for (j, col) in self.cols.iter().enumerate().step_by(col_step) {
            let x = grid.x + (j as f64 + 0.5) * cell + TICK * 0.25;
            svg.text(
                x,
                grid.bottom() + 6.0,
                &text::fit(col, MAX_LABEL, TICK),
                TextStyle::new(TICK)
                    .anchor(Anchor::End)
                    .rotate(-45.0)
                    .class("col-label"),
            );
        }
        self.color_bar(
            svg,
            Rect::new(grid.right() + 16.0, grid.y, 14.0, grid.h.max(120.0)),
        );
    }

    /// The colour bar in `bar`, high values on top, with ticks and label.
    fn color_bar(&self, svg: &mut Svg, bar: Rect) {
        let (lo, hi) = self.range;
        let step_h = bar.h / BAR_STEPS as f64;
        for k in 0..BAR_STEPS {
            let t = (k as f64 + 0.5) / BAR_STEPS as f64;
            let y = bar.bottom() - (k + 1) as f64 * step_h;
            // A hair taller than its step, so no seam shows between steps.
            let r = Rect::new(bar.x, y, bar.w, step_h + 0.3);
            svg.rect(r, &viridis(t), None, "colorbar");
        }
        svg.outline(bar, Stroke::solid(INK, 1.0));
        let scale = Scale::linear(lo, hi, bar.bottom(), bar.y);
        let ticks = scale.ticks((bar.h / 50.0).max(2.0) as usize);
        let widest = ticks
            .iter()
            .map(|(_, l)| text::width(l, TICK))
            .fold(0.0, f64::max);
        for (v, label) in ticks {
            let y = scale.at(v);
            svg.line(
                (bar.right(), y),
                (bar.right() + 4.0, y),
                Stroke::solid(INK, 1.0),
            );
            svg.text(
                bar.right() + 6.0,
                y + TICK * 0.35,
                &label,
                TextStyle::new(TICK).class("tick"),
            );
        }
        svg.text(
            bar.right() + 10.0 + widest + LABEL,
            bar.y + bar.h / 2.0,
            self.value_label,
            TextStyle::new(LABEL)
                .anchor(Anchor::Middle)
                .rotate(-90.0)
                .class("axis"),
        );
    }
}
