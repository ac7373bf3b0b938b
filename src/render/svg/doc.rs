//! The SVG document: a canvas of a fixed size in pixels (y pointing down)
//! that charts draw on, element by element, and that ends as one
//! self-contained file. Text is escaped for XML here, once, whatever the
//! token holds; numbers are written to a tenth of a pixel, which no screen
//! or printer resolves better and which keeps large heatmaps small.

use std::fmt::Write as _;

/// A rectangle of the canvas: left, top, width and height in pixels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub w: f64,
    /// Height.
    pub h: f64,
}

impl Rect {
    /// The rectangle from `(x, y)` of `w` × `h` (negative sizes become 0).
    pub fn new(x: f64, y: f64, w: f64, h: f64) -> Rect {
        Rect {
            x,
            y,
            w: w.max(0.0),
            h: h.max(0.0),
        }
    }

    /// Right edge.
    pub fn right(&self) -> f64 {
        self.x + self.w
    }

    /// Bottom edge.
    pub fn bottom(&self) -> f64 {
        self.y + self.h
    }

    /// The rectangle with `left`, `top`, `right` and `bottom` taken off.
    pub fn inset(&self, left: f64, top: f64, right: f64, bottom: f64) -> Rect {
        Rect::new(
            self.x + left,
            self.y + top,
            self.w - left - right,
            self.h - top - bottom,
        )
    }

    /// Whether the two overlap (touching edges do not).
    pub fn overlaps(&self, o: &Rect) -> bool {
        self.x < o.right() && o.x < self.right() && self.y < o.bottom() && o.y < self.bottom()
    }

    /// Whether `o` lies wholly inside.
    pub fn contains(&self, o: &Rect) -> bool {
        o.x >= self.x && o.y >= self.y && o.right() <= self.right() && o.bottom() <= self.bottom()
    }
}

/// Where a text's `x` lies along it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// `x` is where the text starts.
    Start,
    /// `x` is its middle.
    Middle,
    /// `x` is where it ends.
    End,
}

/// How a text is drawn.
#[derive(Debug, Clone, Copy)]
pub struct TextStyle<'a> {
    /// Font size in pixels.
    pub size: f64,
    /// Where `x` lies along the text.
    pub anchor: Anchor,
    /// Degrees of rotation about `(x, y)`, clockwise (-90 reads upwards).
    pub rotate: f64,
    /// Bold.
    pub bold: bool,
    /// Fill colour (`#rrggbb`); dark grey when `None`.
    pub fill: Option<&'a str>,
    /// Class attribute, so tests and style sheets can find the text.
    pub class: &'a str,
}

impl TextStyle<'_> {
    /// Plain text of `size`, starting at `x`.
    pub fn new(size: f64) -> TextStyle<'static> {
        TextStyle {
            size,
            anchor: Anchor::Start,
            rotate: 0.0,
            bold: false,
            fill: None,
            class: "",
        }
    }
}

impl<'a> TextStyle<'a> {
    /// This style anchored at `anchor`.
    pub fn anchor(self, anchor: Anchor) -> Self {
        TextStyle { anchor, ..self }
    }

    /// This style rotated by `degrees`.
    pub fn rotate(self, degrees: f64) -> Self {
        TextStyle {
            rotate: degrees,
            ..self
        }
    }

    /// This style in bold.
    pub fn bold(self) -> Self {
        TextStyle { bold: true, ..self }
    }

    /// This style in `fill`.
    pub fn fill(self, fill: &'a str) -> Self {
        TextStyle {
            fill: Some(fill),
            ..self
        }
    }

    /// This style with the class `class`.
    pub fn class(self, class: &'a str) -> Self {
        TextStyle { class, ..self }
    }
}

/// How a line or outline is stroked.
#[derive(Debug, Clone, Copy)]
pub struct Stroke<'a> {
    /// Colour (`#rrggbb`).
    pub color: &'a str,
    /// Width in pixels.
    pub width: f64,
    /// `stroke-dasharray`, empty for a solid line.
    pub dash: &'a str,
}

impl<'a> Stroke<'a> {
    /// A solid line of `color` and `width`.
    pub fn solid(color: &'a str, width: f64) -> Self {
        Stroke {
            color,
            width,
            dash: "",
        }
    }

    fn attrs(&self) -> String {
        let mut s = format!(
            r#" fill="none" stroke="{}" stroke-width="{}""#,
            self.color,
            num(self.width)
        );
        if !self.dash.is_empty() {
            let _ = write!(s, r#" stroke-dasharray="{}""#, self.dash);
        }
        s
    }
}

/// An SVG canvas being drawn on.
#[derive(Debug)]
pub struct Svg {
    width: f64,
    height: f64,
    body: String,
}

/// The style sheet of every picture: one sans-serif font; cells and
/// colour-bar steps drawn without smoothed edges, which would show as
/// light seams between neighbours. (Colours are attributes, which a style
/// sheet's rules would override.)
const STYLE: &str = "text{font-family:'DejaVu Sans',Verdana,Arial,sans-serif}.cell,.colorbar{shape-rendering:crispEdges}";

/// Colour of text unless a style says otherwise.
const TEXT: &str = "#222222";

impl Svg {
    /// A blank, white canvas of `width` × `height` pixels.
    pub fn new(width: f64, height: f64) -> Svg {
        let mut svg = Svg {
            width: width.max(1.0),
            height: height.max(1.0),
            body: String::new(),
        };
        let all = svg.area();
        svg.rect(all, "#ffffff", None, "");
        svg
    }

    /// The whole canvas.
    pub fn area(&self) -> Rect {
        Rect::new(0.0, 0.0, self.width, self.height)
    }

    /// The finished document: an XML declaration, the `<svg>` element with
    /// its size and view box, the style sheet and what was drawn.
    pub fn finish(self) -> String {
        let (w, h) = (num(self.width), num(self.height));
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\n<style>{STYLE}</style>\n{}</svg>\n",
            self.body
        )
    }

    /// A line of small grey text at the bottom left of the canvas, saying
    /// what the picture is of.
    pub fn caption(&mut self, text: &str) {
        let y = self.height - 8.0;
        self.text(
            8.0,
            y,
            text,
            TextStyle::new(11.0).fill("#666666").class("caption"),
        );
    }

    /// A line of grey text in the middle of `area`, framed: a panel with
    /// nothing to draw, saying why.
    pub fn empty_panel(&mut self, area: Rect, text: &str) {
        self.outline(area, Stroke::solid("#dddddd", 1.0));
        self.text(
            area.x + area.w / 2.0,
            area.y + area.h / 2.0,
            text,
            TextStyle::new(13.0)
                .anchor(Anchor::Middle)
                .fill("#666666")
                .class("empty"),
        );
    }

    /// A filled rectangle with an optional tooltip (`<title>`, shown on
    /// hover in a browser) and class.
    pub fn rect(&mut self, r: Rect, fill: &str, title: Option<&str>, class: &str) {
        let _ = write!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}""#,
            num(r.x),
            num(r.y),
            num(r.w),
            num(r.h)
        );
        self.class_and_title(class, title, "rect");
    }

    /// The outline of a rectangle.
    pub fn outline(&mut self, r: Rect, stroke: Stroke) {
        let _ = writeln!(
            self.body,
            r#"<rect x="{}" y="{}" width="{}" height="{}"{}/>"#,
            num(r.x),
            num(r.y),
            num(r.w),
            num(r.h),
            stroke.attrs()
        );
    }

    /// A straight line.
    pub fn line(&mut self, from: (f64, f64), to: (f64, f64), stroke: Stroke) {
        let _ = writeln!(
            self.body,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}"{}/>"#,
            num(from.0),
            num(from.1),
            num(to.0),
            num(to.1),
            stroke.attrs()
        );
    }

    /// A line through `points`, in order.
    pub fn polyline(&mut self, points: &[(f64, f64)], stroke: Stroke) {
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", num(x), num(y)))
            .collect();
        let _ = writeln!(
            self.body,
            r#"<polyline points="{}"{}/>"#,
            pts.join(" "),
            stroke.attrs()
        );
    }

    /// A path (`d` in SVG path syntax) filled with `fill` and outlined by
    /// `stroke`, with an optional tooltip and class.
    pub fn path(
        &mut self,
        d: &str,
        fill: &str,
        stroke: Option<Stroke>,
        title: Option<&str>,
        class: &str,
    ) {
        let _ = write!(self.body, r#"<path d="{d}" fill="{fill}""#);
        if let Some(s) = stroke {
            let attrs = s.attrs().replacen(r#" fill="none""#, "", 1);
            self.body.push_str(&attrs);
        }
        self.class_and_title(class, title, "path");
    }

    /// `text` at `(x, y)` (the baseline), escaped.
    pub fn text(&mut self, x: f64, y: f64, text: &str, style: TextStyle) {
        let _ = write!(
            self.body,
            r#"<text x="{}" y="{}" font-size="{}""#,
            num(x),
            num(y),
            num(style.size)
        );
        match style.anchor {
            Anchor::Start => {}
            Anchor::Middle => self.body.push_str(r#" text-anchor="middle""#),
            Anchor::End => self.body.push_str(r#" text-anchor="end""#),
        }
        if style.rotate != 0.0 {
            let _ = write!(
                self.body,
                r#" transform="rotate({} {} {})""#,
                num(style.rotate),
                num(x),
                num(y)
            );
        }
        if style.bold {
            self.body.push_str(r#" font-weight="bold""#);
        }
        let _ = write!(self.body, r#" fill="{}""#, style.fill.unwrap_or(TEXT));
        if !style.class.is_empty() {
            let _ = write!(self.body, r#" class="{}""#, style.class);
        }
        let _ = writeln!(self.body, ">{}</text>", escape(text));
    }

    /// Ends an element begun by `<name` and its attributes: the class, and
    /// a `<title>` child when there is a tooltip.
    fn class_and_title(&mut self, class: &str, title: Option<&str>, name: &str) {
        if !class.is_empty() {
            let _ = write!(self.body, r#" class="{class}""#);
        }
        match title {
            Some(t) => {
                let _ = writeln!(self.body, "><title>{}</title></{name}>", escape(t));
            }
            None => self.body.push_str("/>\n"),
        }
    }
}

/// A coordinate or length to a tenth of a pixel, without a trailing `.0`
/// (`12`, `12.5`, `-3.1`); 0 for what is not finite, so a stray NaN moves
/// a mark rather than breaking the file.
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "0".into();
    }
    let tenths = (x * 10.0).round() as i64;
    let (sign, t) = if tenths < 0 {
        ("-", -tenths)
    } else {
        ("", tenths)
    };
    match t % 10 {
        0 => format!("{sign}{}", t / 10),
        f => format!("{sign}{}.{f}", t / 10),
    }
}

/// `s` as XML character data or attribute value: markup characters
/// escaped, and characters XML 1.0 forbids (most C0 controls, U+FFFE,
/// U+FFFF) replaced by U+FFFD, so any token string makes a well-formed file.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            '\u{0}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_short() {
        for (x, want) in [
            (12.0, "12"),
            (12.04, "12"),
            (12.05, "12.1"),
            (-3.12, "-3.1"),
            (-0.01, "0"),
            (0.0, "0"),
            (f64::NAN, "0"),
            (1e6, "1000000"),
        ] {
            assert_eq!(num(x), want, "{x}");
        }
    }

    #[test]
    fn any_text_is_escaped_into_well_formed_xml() {
        assert_eq!(
            escape(r#"<a & "b" 'c'>"#),
            "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;"
        );
        assert_eq!(
            escape("a\u{0}b\u{1b}\u{ffff}\n"),
            "a\u{fffd}b\u{fffd}\u{fffd}\n"
        );
        let mut svg = Svg::new(100.0, 50.0);
        svg.text(1.0, 2.0, "</text><script>", TextStyle::new(10.0));
        svg.rect(
            Rect::new(0.0, 0.0, 5.0, 5.0),
            "#000000",
            Some("a<b"),
            "cell",
        );
        let doc = svg.finish();
        assert!(doc.contains("&lt;/text&gt;&lt;script&gt;"), "{doc}");
        assert!(doc.contains("<title>a&lt;b</title></rect>"), "{doc}");
        assert!(doc.starts_with("<?xml") && doc.ends_with("</svg>\n"));
    }

    #[test]
    fn rects_overlap_only_when_they_share_area() {
        let a = Rect::new(0.0, 0.0, 10.0, 10.0);
        assert!(a.overlaps(&Rect::new(5.0, 5.0, 10.0, 10.0)));
        assert!(!a.overlaps(&Rect::new(10.0, 0.0, 5.0, 5.0)));
        assert!(a.contains(&Rect::new(1.0, 1.0, 9.0, 9.0)));
        assert!(!a.contains(&Rect::new(1.0, 1.0, 10.0, 9.0)));
        assert_eq!(a.inset(1.0, 2.0, 3.0, 20.0), Rect::new(1.0, 2.0, 6.0, 0.0));
    }
}
