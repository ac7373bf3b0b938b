//! Pictures, as SVG written directly: a histogram, a heatmap, a scatter
//! plot, stacked bars and ranked bars, each drawn into a rectangle of an [`Svg`]
//! canvas, so one file can hold several panels (`similarity --plot`: the
//! heatmap and the map side by side).
//!
//! SVG is text with a few elements; what makes a chart readable (labels
//! that do not overlap, grey-safe colours, log scales, sizes from the
//! labels' widths) has to be written here whichever library draws the
//! lines, and a plotting crate's SVG backend adds its crates and does none
//! of that. Every picture is self-contained: one font family by name, no
//! script, nothing fetched.
//!
//! | file | what it holds |
//! |---|---|
//! | `doc.rs` | the canvas: rectangles, lines, paths, text; XML escaping, compact numbers |
//! | `scale.rs` | linear and log scales, round ticks, tick labels |
//! | `axes.rs` | an x–y chart's frame (title, box, grid, ticks, axis labels) and legend |
//! | `palette.rs` | viridis, and grey-safe group styles (colour, shape, dash) |
//! | `text.rs` | text widths estimated, labels cut to fit, labels thinned |
//! | `histogram.rs` | counts in bins, log scale across decades, subsets outlined, cuts |
//! | `heatmap.rs` | a labelled grid of values with a colour bar |
//! | `scatter.rs` | points in groups, labels placed where they fit |
//! | `bars.rs` | stacked horizontal bars with a legend and totals |
//! | `ranking.rs` | ranked items as bars, named, with a threshold |

mod axes;
mod bars;
mod doc;
mod heatmap;
mod histogram;
mod palette;
mod ranking;
mod scale;
mod scatter;
mod text;

pub use bars::{Bar, Bars};
pub use doc::{Rect, Svg, escape};
pub use heatmap::Heatmap;
pub use histogram::{Cut, Histogram, Subset};
pub use ranking::Ranking;
pub use scatter::{Point, Scatter};

#[cfg(test)]
mod tests {
    use super::*;

    /// `doc` parsed as XML; the elements of `name` with `class`.
    fn count(doc: &roxmltree::Document, name: &str, class: &str) -> usize {
        doc.descendants()
            .filter(|n| n.has_tag_name(name) && n.attribute("class") == Some(class))
            .count()
    }

    fn texts(doc: &roxmltree::Document, class: &str) -> Vec<String> {
        doc.descendants()
            .filter(|n| n.has_tag_name("text") && n.attribute("class") == Some(class))
            .map(|n| n.text().unwrap_or("").to_string())
            .collect()
    }

    fn draw(w: f64, h: f64, f: impl FnOnce(&mut Svg, Rect)) -> String {
        let mut svg = Svg::new(w, h);
        let area = svg.area();
        f(&mut svg, area);
        svg.finish()
    }

    #[test]
    fn heatmap_cells_and_labels() {
        let labels: Vec<String> = ["dog", "cat", "<fish>", "a\u{1}b"]
            .into_iter()
            .map(String::from)
            .collect();
        let values: Vec<f64> = (0..16).map(|i| f64::from(i) / 15.0).collect();
        let h = Heatmap {
            title: "cosine",
            rows: &labels,
            cols: &labels,
            values: &values,
            range: (0.0, 1.0),
            value_label: "cosine",
            decimals: 2,
        };
        let svg = draw(500.0, 400.0, |s, a| h.draw(s, a));
        let doc = roxmltree::Document::parse(&svg).expect("well-formed XML");
        assert_eq!(count(&doc, "rect", "cell"), 16);
        assert_eq!(
            texts(&doc, "row-label"),
            ["dog", "cat", "<fish>", "a\u{fffd}b"]
        );
        assert_eq!(texts(&doc, "col-label").len(), 4);
        // Cells of 40 pixels have room for their values.
        assert_eq!(texts(&doc, "value").len(), 16);
        assert!(texts(&doc, "tick").contains(&"1.0".to_string()));
    }

    #[test]
    fn heatmap_labels_thin_out_on_small_cells() {
        let labels: Vec<String> = (0..200).map(|i| format!("token{i}")).collect();
        let values = vec![0.5; 200 * 200];
        let h = Heatmap {
            title: "",
            rows: &labels,
            cols: &labels,
            values: &values,
            range: (-1.0, 1.0),
            value_label: "cosine",
            decimals: 3,
        };
        let svg = draw(700.0, 700.0, |s, a| h.draw(s, a));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(count(&doc, "rect", "cell"), 40_000);
        let (rows, cols) = (texts(&doc, "row-label"), texts(&doc, "col-label"));
        assert!(rows.len() < 100 && rows.len() > 10, "{}", rows.len());
        assert!(cols.len() <= rows.len());
        assert_eq!(rows[0], "token0");
        assert!(texts(&doc, "value").is_empty());
    }

    #[test]
    fn scatter_places_labels_apart() {
        // Ten points on one spot: one label fits, the others are left out.
        let mut points: Vec<Point> = (0..10)
            .map(|i| Point {
                x: 1.0,
                y: 1.0,
                label: Some(format!("p{i}")),
                group: 0,
            })
            .collect();
        points.push(Point {
            x: 5.0,
            y: 5.0,
            label: Some("far".into()),
            group: 1,
        });
        points.push(Point {
            x: f64::NAN,
            y: 0.0,
            label: None,
            group: 0,
        });
        let groups = ["rows".to_string(), "special".to_string()];
        let s = Scatter {
            title: "map",
            x_label: "PC1",
            y_label: "PC2",
            points: &points,
            groups: &groups,
            equal_aspect: true,
            dense: false,
        };
        let svg = draw(400.0, 400.0, |v, a| s.draw(v, a));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(count(&doc, "path", "point"), 11);
        let labels = texts(&doc, "point-label");
        assert!(labels.contains(&"far".to_string()), "{labels:?}");
        assert!(labels.len() < 11, "{labels:?}");
        assert_eq!(
            texts(&doc, "note"),
            [format!(
                "{} label(s) left out where they would overlap",
                11 - labels.len()
            )]
        );
        assert_eq!(texts(&doc, "legend"), ["rows", "special"]);
    }

    #[test]
    fn histogram_turns_log_across_decades() {
        let counts = [0, 3, 120_000, 800, 2, 0, 1];
        let special = [0, 1, 0, 0, 2, 0, 0];
        let h = Histogram {
            title: "norms",
            x_label: "L2 norm",
            y_label: "rows",
            min: 0.0,
            max: 7.0,
            counts: &counts,
            subsets: &[Subset {
                name: "special",
                counts: &special,
            }],
            cuts: &[Cut {
                at: 4.5,
                label: "strong from 4.5",
            }],
        };
        let svg = draw(600.0, 360.0, |v, a| h.draw(v, a));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(count(&doc, "rect", "bar"), 5);
        assert!(texts(&doc, "axis").contains(&"rows (log scale)".to_string()));
        assert!(texts(&doc, "tick").contains(&"100k".to_string()));
        assert_eq!(texts(&doc, "legend"), ["all rows", "special (3)"]);
        assert_eq!(texts(&doc, "cut"), ["strong from 4.5"]);
    }

    #[test]
    fn bars_stack_their_parts() {
        let bars = [
            Bar {
                label: "as stored",
                values: &[525e6, 525e6, 6.98e9],
            },
            Bar {
                label: "tied",
                values: &[525e6, 0.0, 6.98e9],
            },
        ];
        let b = Bars {
            title: "parameters",
            unit: "parameters",
            bars: &bars,
            parts: &["embedding", "head", "the rest"],
        };
        let svg = draw(600.0, 220.0, |v, a| b.draw(v, a));
        let doc = roxmltree::Document::parse(&svg).unwrap();
        assert_eq!(count(&doc, "rect", "segment"), 5);
        assert_eq!(texts(&doc, "bar-label"), ["as stored", "tied"]);
        assert_eq!(texts(&doc, "total"), ["8.03G", "7.5G"]);
        assert_eq!(texts(&doc, "legend"), ["embedding", "head", "the rest"]);
    }
}
