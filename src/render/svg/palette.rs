//! Colours that still read when printed in grey: viridis for values (its
//! lightness rises evenly from one end to the other), and for groups of
//! marks a series of styles that differ in shape and dash as well as in
//! colour (the Okabe–Ito colours, told apart by colour-blind readers too).

use std::fmt::Write as _;

/// Viridis at 0, 0.1, …, 1 (matplotlib's table); between them, linear.
const VIRIDIS: [[u8; 3]; 11] = [
    [0x44, 0x01, 0x54],
    [0x48, 0x24, 0x75],
    [0x41, 0x44, 0x87],
    [0x35, 0x5f, 0x8d],
    [0x2a, 0x78, 0x8e],
    [0x21, 0x91, 0x8c],
    [0x22, 0xa8, 0x84],
    [0x44, 0xbf, 0x70],
    [0x7a, 0xd1, 0x51],
    [0xbd, 0xdf, 0x26],
    [0xfd, 0xe7, 0x25],
];

/// The colour of `t` (0 to 1, clamped; NaN is 0) on viridis, as `#rrggbb`.
pub fn viridis(t: f64) -> String {
    let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
    let x = t * (VIRIDIS.len() - 1) as f64;
    let i = (x.floor() as usize).min(VIRIDIS.len() - 2);
    let f = x - i as f64;
    let mut out = String::from("#");
    for (&a, &b) in VIRIDIS[i].iter().zip(&VIRIDIS[i + 1]) {
        let (a, b) = (f64::from(a), f64::from(b));
        let _ = write!(out, "{:02x}", (a + (b - a) * f).round() as u8);
    }
    out
}

/// Whether text on `t`'s viridis colour is better white than black.
pub fn dark(t: f64) -> bool {
    t < 0.55
}

/// The outline of a mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A disc.
    Circle,
    /// A square.
    Square,
    /// A triangle, point up.
    Triangle,
    /// A square on its corner.
    Diamond,
    /// A diagonal cross.
    Cross,
    /// A triangle, point down.
    Down,
}

impl Shape {
    /// The SVG path of this mark centred on `(x, y)`, `r` pixels from the
    /// centre to its edge (about the same area for every shape).
    pub fn path(self, x: f64, y: f64, r: f64) -> String {
        use super::doc::num;
        let p = |dx: f64, dy: f64| format!("{},{}", num(x + dx), num(y + dy));
        match self {
            Shape::Circle => format!(
                "M{} a{r},{r} 0 1,0 {d},0 a{r},{r} 0 1,0 -{d},0 Z",
                p(-r, 0.0),
                r = num(r),
                d = num(2.0 * r)
            ),
            Shape::Square => {
                let s = r * 0.9;
                format!(
                    "M{} H{} V{} H{} Z",
                    p(-s, -s),
                    num(x + s),
                    num(y + s),
                    num(x - s)
                )
            }
            Shape::Triangle => {
                let s = r * 1.2;
                format!("M{} L{} L{} Z", p(0.0, -s), p(s, s * 0.8), p(-s, s * 0.8))
            }
            Shape::Down => {
                let s = r * 1.2;
                format!("M{} L{} L{} Z", p(0.0, s), p(s, -s * 0.8), p(-s, -s * 0.8))
            }
            Shape::Diamond => {
                let s = r * 1.25;
                format!(
                    "M{} L{} L{} L{} Z",
                    p(0.0, -s),
                    p(s, 0.0),
                    p(0.0, s),
                    p(-s, 0.0)
                )
            }
            Shape::Cross => {
                let (s, w) = (r * 1.1, r * 0.35);
                format!(
                    "M{} L{} L{} L{} L{} L{} L{} L{} L{} L{} L{} L{} Z",
                    p(-s, -s + w),
                    p(-s + w, -s),
                    p(0.0, -w),
                    p(s - w, -s),
                    p(s, -s + w),
                    p(w, 0.0),
                    p(s, s - w),
                    p(s - w, s),
                    p(0.0, w),
                    p(-s + w, s),
                    p(-s, s - w),
                    p(-w, 0.0)
                )
            }
        }
    }
}

/// How the marks, lines and legend entry of one group are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Series {
    /// Fill or line colour.
    pub color: &'static str,
    /// The mark's outline.
    pub shape: Shape,
    /// The line's `stroke-dasharray` (empty: solid).
    pub dash: &'static str,
}

/// The base group: every row, unremarkable, in a light grey that marks of
/// the other groups stand out on.
pub const BASE: Series = Series {
    color: "#a8a8a8",
    shape: Shape::Circle,
    dash: "",
};

/// The highlighted groups, in order: dark to light, each with its own
/// shape and dash, so that grey print tells them apart by form.
const SERIES: [Series; 6] = [
    Series {
        color: "#0072b2",
        shape: Shape::Square,
        dash: "",
    },
    Series {
        color: "#d55e00",
        shape: Shape::Triangle,
        dash: "6 3",
    },
    Series {
        color: "#009e73",
        shape: Shape::Diamond,
        dash: "2 2",
    },
    Series {
        color: "#cc79a7",
        shape: Shape::Cross,
        dash: "8 3 2 3",
    },
    Series {
        color: "#e69f00",
        shape: Shape::Down,
        dash: "1 3",
    },
    Series {
        color: "#000000",
        shape: Shape::Circle,
        dash: "4 4",
    },
];

/// The style of highlighted group `i` (0-based); styles repeat after six.
pub fn series(i: usize) -> Series {
    SERIES[i % SERIES.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative luminance of `#rrggbb`, as grey print renders it.
    fn grey(hex: &str) -> f64 {
        let c = |i: usize| f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
        0.2126 * c(1) + 0.7152 * c(3) + 0.0722 * c(5)
    }

    #[test]
    fn viridis_ends_and_grows_lighter() {
        assert_eq!(viridis(0.0), "#440154");
        assert_eq!(viridis(1.0), "#fde725");
        assert_eq!(viridis(0.05), "#461365");
        assert_eq!(viridis(f64::NAN), viridis(0.0));
        let greys: Vec<f64> = (0..=20)
            .map(|i| grey(&viridis(f64::from(i) / 20.0)))
            .collect();
        assert!(greys.windows(2).all(|w| w[0] < w[1]), "{greys:?}");
    }

    #[test]
    fn series_differ_in_form_not_only_colour() {
        for i in 0..SERIES.len() {
            for j in 0..i {
                let (a, b) = (series(i), series(j));
                assert!(a.shape != b.shape || a.dash != b.dash, "{i} and {j}");
            }
        }
        assert!(
            Shape::Circle
                .path(10.0, 10.0, 3.0)
                .starts_with("M7,10 a3,3")
        );
    }
}
