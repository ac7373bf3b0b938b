//! Ranked items as horizontal bars, best on top, each named on its left
//! and its value printed at its end, with a threshold as a dashed line:
//! the top candidates of a score. Bars at or past the threshold are dark,
//! the others light, so the two stay apart in grey print too.

use super::axes::{self, INK, LABEL, TICK, TITLE};
use super::doc::{Anchor, Rect, Stroke, Svg, TextStyle};
use super::histogram::Cut;
use super::scale::Scale;
use super::text;

/// Widest item label, in pixels.
const MAX_LABEL: f64 = 250.0;
/// Height of a bar's row, in pixels.
pub const PITCH: f64 = 17.0;
/// Room above the bars: the title, then a line for the threshold's label.
const TOP: f64 = TITLE + 16.0 + TICK + 6.0;
/// Fill of a bar at or past the threshold, and of one before it.
const PAST: &str = "#0072b2";
const BEFORE: &str = "#a6c8e0";

/// Ranked bars.
#[derive(Debug, Clone)]
pub struct Ranking<'a> {
    /// Shown above the bars.
    pub title: &'a str,
    /// What the values are, below the axis.
    pub value_label: &'a str,
    /// Each item's label and value, top to bottom.
    pub items: &'a [(String, f64)],
    /// The threshold, when there is one.
    pub cut: Option<Cut<'a>>,
    /// Decimals of the printed values.
    pub decimals: usize,
}

impl Ranking<'_> {
    /// The height the chart needs in pixels: its title, a row per item,
    /// the axis and its label.
    pub fn height(&self) -> f64 {
        TOP + PITCH * self.items.len().max(1) as f64 + TICK + LABEL + 30.0
    }

    /// Draws the chart in `area`.
    pub fn draw(&self, svg: &mut Svg, area: Rect) {
        let label_w = (self.items.iter())
            .map(|(l, _)| text::width(l, TICK))
            .fold(0.0, f64::max)
            .min(MAX_LABEL);
        let values = self.items.iter().map(|&(_, v)| v).filter(|v| v.is_finite());
        let cut = self.cut.as_ref().map(|c| c.at).filter(|c| c.is_finite());
        let (lo, hi) = values
            .chain(cut)
            .fold((0.0f64, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
        // Room at the right end for the longest value printed there.
        let value_w = text::width(&format!("{:.*}", self.decimals, -hi.abs()), TICK) + 8.0;
        let plot = area.inset(label_w + 10.0, TOP, value_w + 6.0, TICK + LABEL + 26.0);
        axes::title(svg, area, area.x + area.w / 2.0, self.title);
        let xs = Scale::linear(
            lo,
            if hi > lo { hi } else { lo + 1.0 },
            plot.x,
            plot.right(),
        );
        axes::x_grid(svg, plot, &xs, (plot.w / 70.0).max(2.0) as usize);
        // The threshold first, so the values printed over it stay readable.
        if let (Some(c), Some(at)) = (&self.cut, cut) {
            let px = xs.at(at);
            svg.line(
                (px, plot.y - 4.0),
                (px, plot.bottom()),
                Stroke {
                    color: "#000000",
                    width: 1.5,
                    dash: "5 3",
                },
            );
            // Right of the line when it fits there, else left of it.
            let fits = px + 3.0 + text::width(c.label, TICK) <= area.right();
            let (x, anchor) = if fits {
                (px + 3.0, Anchor::Start)
            } else {
                (px - 3.0, Anchor::End)
            };
            svg.text(
                x,
                plot.y - 4.0,
                c.label,
                TextStyle::new(TICK).anchor(anchor).class("cut"),
            );
        }
        let zero = xs.at(0.0);
        for (i, (label, v)) in self.items.iter().enumerate() {
            let y = plot.y + PITCH * i as f64;
            let past = cut.is_some_and(|c| *v >= c);
            if v.is_finite() {
                let (a, b) = (zero.min(xs.at(*v)), zero.max(xs.at(*v)));
                let tip = format!("{label}: {v:.*}", self.decimals);
                let fill = if past { PAST } else { BEFORE };
                svg.rect(
                    Rect::new(a, y + 2.0, b - a, PITCH - 4.0),
                    fill,
                    Some(&tip),
                    "rank-bar",
                );
                let value = format!("{v:.*}", self.decimals);
                let w = text::width(&value, TICK);
                svg.rect(
                    Rect::new(b + 2.0, y + 2.0, w + 4.0, PITCH - 4.0),
                    "#ffffff",
                    None,
                    "value-back",
                );
                svg.text(
                    b + 4.0,
                    y + PITCH / 2.0 + TICK * 0.35,
                    &value,
                    TextStyle::new(TICK).class("value"),
                );
            }
            svg.text(
                plot.x - 6.0,
                y + PITCH / 2.0 + TICK * 0.35,
                &text::fit(label, MAX_LABEL, TICK),
                TextStyle::new(TICK).anchor(Anchor::End).class("rank-label"),
            );
        }
        let axis = Stroke::solid(INK, 1.0);
        svg.line((zero, plot.y), (zero, plot.bottom()), axis);
        svg.line((plot.x, plot.bottom()), (plot.right(), plot.bottom()), axis);
        svg.text(
            plot.x + plot.w / 2.0,
            plot.bottom() + TICK + LABEL + 16.0,
            self.value_label,
            TextStyle::new(LABEL).anchor(Anchor::Middle).class("axis"),
        );
    }
}
