//! The pieces the page is written with: escaped text, tables, figures
//! holding an inline SVG, and the JSON of a command in a `<details>`.
//! Everything is written as well-formed XML too (every element closed,
//! only XML's own entities), so that the page parses as XHTML and tests
//! can read it with an XML parser.

use std::fmt::Write as _;

use crate::render::svg::escape;

/// `s` as HTML text or attribute value: markup escaped, and characters
/// XML forbids replaced (a token may hold any of them).
pub fn esc(s: &str) -> String {
    escape(s)
}

/// `s` as inline code.
pub fn code(s: &str) -> String {
    format!("<code>{}</code>", esc(s))
}

/// A cell of a table: its HTML, and whether it holds a number (set right).
pub struct Cell {
    html: String,
    num: bool,
}

impl Cell {
    /// Text, escaped.
    pub fn text(s: &str) -> Cell {
        Cell {
            html: esc(s),
            num: false,
        }
    }

    /// A number, set right.
    pub fn num(s: &str) -> Cell {
        Cell {
            html: esc(s),
            num: true,
        }
    }

    /// HTML as written.
    pub fn html(html: String) -> Cell {
        Cell { html, num: false }
    }
}

/// A table with a header row; `class` styles it. Header cells of the
/// columns whose first row holds numbers are set right too.
pub fn table(class: &str, header: &[&str], rows: Vec<Vec<Cell>>) -> String {
    let right: Vec<bool> = (0..header.len())
        .map(|i| rows.first().and_then(|r| r.get(i)).is_some_and(|c| c.num))
        .collect();
    let mut out = format!("<table class=\"{class}\">\n<thead><tr>");
    for (h, r) in header.iter().zip(&right) {
        let _ = write!(out, "<th{}>{}</th>", num_class(*r), esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for row in rows {
        out.push_str("<tr>");
        for c in row {
            let _ = write!(out, "<td{}>{}</td>", num_class(c.num), c.html);
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

fn num_class(num: bool) -> &'static str {
    if num { " class=\"num\"" } else { "" }
}

/// A table of facts: a name and a value (HTML) a row.
pub fn facts(rows: &[(&str, String)]) -> String {
    let mut out = String::from("<table class=\"facts\">\n<tbody>\n");
    for (name, value) in rows {
        let _ = writeln!(out, "<tr><th>{}</th><td>{value}</td></tr>", esc(name));
    }
    out.push_str("</tbody>\n</table>\n");
    out
}

/// A figure: the SVG document `svg` inline (its XML declaration left
/// out), with a caption (HTML).
pub fn figure(svg: &str, caption: &str) -> String {
    let inline = svg.find("<svg").map_or(svg, |at| &svg[at..]);
    format!("<figure>\n{inline}<figcaption>{caption}</figcaption>\n</figure>\n")
}

/// JSON collapsed under a line saying what printed it (`what`, HTML):
/// the numbers behind a section, for a reader to copy. `id` names the
/// `<pre>` holding it (`json-check`).
pub fn json_block(id: &str, what: &str, json: &[u8]) -> String {
    format!(
        "<details class=\"data\"><summary>The numbers: {what}</summary>\n<pre id=\"json-{id}\">{}</pre>\n</details>\n",
        esc(&String::from_utf8_lossy(json))
    )
}

/// A note that a section could not be made, and why.
pub fn missing(reason: &str) -> String {
    format!("<p class=\"missing\">Not available: {}</p>\n", esc(reason))
}

/// `arg` as a shell would need it written: bare when it holds only
/// characters a shell leaves alone, else in single quotes.
pub fn shell_word(arg: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@+,%".contains(c);
    if !arg.is_empty() && arg.chars().all(plain) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_are_well_formed_and_escaped() {
        let t = table(
            "t",
            &["a", "n"],
            vec![vec![Cell::text("<b>&"), Cell::num("1,024")]],
        );
        assert!(
            t.contains("<td>&lt;b&gt;&amp;</td><td class=\"num\">1,024</td>"),
            "{t}"
        );
        assert!(t.contains("<th class=\"num\">n</th>"), "{t}");
        let j = json_block("x", "info", b"{\"a\": \"<&>\"}\n");
        assert!(j.contains("&quot;&lt;&amp;&gt;&quot;"), "{j}");
        let f = figure("<?xml version=\"1.0\"?>\n<svg></svg>\n", "c");
        assert!(f.starts_with("<figure>\n<svg>"), "{f}");
        assert_eq!(
            shell_word("fixtures/llama-sharded"),
            "fixtures/llama-sharded"
        );
        assert_eq!(shell_word("a b'c"), r"'a b'\''c'");
    }
}
