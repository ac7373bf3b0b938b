//! A histogram of counts in equal bins, on a log scale when the counts
//! span two decades or more (a few special rows beside a hundred thousand
//! ordinary ones still show); subsets of the rows (special, reserved,
//! untrained-looking) as outlines over the bars, each in its own colour and
//! dash; values of note (a threshold) as labelled vertical lines. The
//! legend takes the top corner over the lower bars.

use super::axes::{self, Axis, Key, LABEL, TICK, TITLE};
use super::doc::{Anchor, Rect, Stroke, Svg, TextStyle};
use super::palette::series;

/// Fill of the bars of all rows.
const BARS: &str = "#c6cdd6";

/// Counts of a subset of the rows, in the histogram's bins.
#[derive(Debug, Clone)]
pub struct Subset<'a> {
    /// Its name in the legend.
    pub name: &'a str,
    /// One count per bin.
    pub counts: &'a [u64],
}

/// A value of note, drawn as a vertical line.
#[derive(Debug, Clone)]
pub struct Cut<'a> {
    /// Where.
    pub at: f64,
    /// What it is (`strong from 5`).
    pub label: &'a str,
}

/// A histogram.
#[derive(Debug, Clone)]
pub struct Histogram<'a> {
    /// Shown above the plot.
    pub title: &'a str,
    /// What the bins are of, with its unit.
    pub x_label: &'a str,
    /// What is counted (`rows`).
    pub y_label: &'a str,
    /// Low edge of the first bin.
    pub min: f64,
    /// High edge of the last bin.
    pub max: f64,
    /// Count of each bin.
    pub counts: &'a [u64],
    /// Subsets outlined over the bars.
    pub subsets: &'a [Subset<'a>],
    /// Vertical lines.
    pub cuts: &'a [Cut<'a>],
}

/// Whether counts this far apart need a log scale: the largest at least
/// a hundred times the smallest that is not 0.
pub fn spans_decades(counts: impl IntoIterator<Item = u64>) -> bool {
    let (lo, hi) = counts
        .into_iter()
        .filter(|&c| c > 0)
        .fold((u64::MAX, 0), |(lo, hi), c| (lo.min(c), hi.max(c)));
    hi >= lo.saturating_mul(100)
}

impl Histogram<'_> {
    /// The top of the y axis, raised from `hi` when subsets make the
    /// legend taller than a line, so that the tallest bar stays below it
    /// (with a line or so, the legend fits over the lower bars).
    fn legend_room(&self, area: Rect, log: bool, lo: f64, hi: f64) -> f64 {
        if self.subsets.is_empty() {
            return hi;
        }
        let entries = 1 + self.subsets.len();
        let title = if self.title.is_empty() {
            8.0
        } else {
            TITLE + 14.0
        };
        let plot_h = area.h - title - (TICK + LABEL + 26.0);
        let legend_h = (LABEL + 6.0) * entries as f64 + 8.0 + 12.0;
        let share = (legend_h / plot_h.max(1.0)).clamp(0.0, 0.6);
        if log {
            lo * (hi / lo).powf(1.0 / (1.0 - share))
        } else {
            lo + (hi - lo) / (1.0 - share)
        }
    }

    /// Draws the histogram in `area`.
    pub fn draw(&self, svg: &mut Svg, area: Rect) {
        let all = self
            .counts
            .iter()
            .chain(self.subsets.iter().flat_map(|s| s.counts))
            .copied();
        let log = spans_decades(all.clone());
        let top = all.max().unwrap_or(0).max(1) as f64;
        // A baseline below 1, so that a bin of one row shows.
        let (lo, hi) = if log {
            (0.7, top * 2.0)
        } else {
            (0.0, top * 1.08)
        };
        let hi = self.legend_room(area, log, lo, hi);
        let x = Axis {
            label: self.x_label,
            lo: self.min,
            hi: self.max,
            log: false,
        };
        let y = Axis {
            label: self.y_label,
            lo,
            hi,
            log,
        };
        let (plot, xs, ys) = axes::frame(svg, area, self.title, &x, &y);
        let bins = self.counts.len().max(1);
        let width = (self.max - self.min) / bins as f64;
        let edge = |i: usize| xs.at(self.min + width * i as f64);
        let base = ys.at(lo);
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let (a, b) = (edge(i), edge(i + 1));
            let yc = ys.at(c as f64);
            let tip = format!(
                "{:.4} to {:.4}: {c} {}",
                self.min + width * i as f64,
                self.min + width * (i + 1) as f64,
                self.y_label
            );
            svg.rect(Rect::new(a, yc, b - a, base - yc), BARS, Some(&tip), "bar");
        }
        let mut entries = vec![(Key::Fill(BARS), format!("all {}", self.y_label))];
        for (k, s) in self.subsets.iter().enumerate() {
            let style = series(k);
            let at = |c: u64| if c == 0 { base } else { ys.at(c as f64) };
            let mut steps = vec![(edge(0), base)];
            for (i, &c) in s.counts.iter().enumerate().take(bins) {
                steps.push((edge(i), at(c)));
                steps.push((edge(i + 1), at(c)));
            }
            steps.push((edge(bins), base));
            svg.polyline(
                &steps,
                Stroke {
                    color: style.color,
                    width: 2.0,
                    dash: style.dash,
                },
            );
            let total: u64 = s.counts.iter().sum();
            entries.push((Key::Line(style), format!("{} ({total})", s.name)));
        }
        for cut in self.cuts {
            let px = xs.at(cut.at);
            if px < plot.x || px > plot.right() {
                continue;
            }
            svg.line(
                (px, plot.y),
                (px, plot.bottom()),
                Stroke {
                    color: "#000000",
                    width: 1.5,
                    dash: "5 3",
                },
            );
            svg.text(
                px - 4.0,
                plot.y + 4.0,
                cut.label,
                TextStyle::new(TICK)
                    .anchor(Anchor::End)
                    .rotate(-90.0)
                    .class("cut"),
            );
        }
        // The legend goes in the top corner over the lower bars.
        let third = bins.div_ceil(3);
        let tallest = |counts: &[u64]| counts.iter().copied().max().unwrap_or(0);
        let left = tallest(&self.counts[..third.min(self.counts.len())])
            < tallest(&self.counts[self.counts.len().saturating_sub(third)..]);
        axes::legend_at(svg, plot, &entries, left);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decades_decide_the_scale() {
        assert!(spans_decades([0, 1, 100]));
        assert!(!spans_decades([0, 5, 100]));
        assert!(!spans_decades([]));
        assert!(!spans_decades([0, 0]));
    }
}
