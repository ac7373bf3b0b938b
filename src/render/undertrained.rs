//! Text for `undertrained`: what was scored against what, a block chart of
//! the score distribution with the strong threshold marked, and the ranked
//! candidates. And its picture (`--plot`, and the report's page): the
//! histogram of the scores with the threshold, beside the top candidates.

use std::fmt::Write;

use super::svg::{self, Cut, Ranking, Rect, Svg};
use super::{Human, Style, count, table};
use crate::cmd::undertrained::{Candidate, UndertrainedReport};
use crate::vocab::TokenKind;

/// Bar heights, lowest first.
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One char per bin of `counts`, heights on a log scale (an empty bin is
/// a space, the fullest is `█`), so that the few high-scoring rows still
/// show.
pub fn sparkline(counts: &[u64]) -> String {
    let top = counts.iter().copied().max().unwrap_or(0);
    counts
        .iter()
        .map(|&c| match c {
            0 => ' ',
            _ if top <= 1 => BLOCKS[7],
            _ => {
                let f = (c as f64).ln() / (top as f64).ln();
                BLOCKS[((f * 7.0).round() as usize).min(7)]
            }
        })
        .collect()
}

fn chart(r: &UndertrainedReport, style: &Style, out: &mut String) {
    let h = &r.histogram;
    if h.counts.is_empty() {
        return;
    }
    let width = h.counts.len();
    let _ = writeln!(
        out,
        "{}",
        style.dim(&format!(
            "score of {} rows ({} bins, heights on a log scale)",
            count(r.scored as u64),
            width
        ))
    );
    let _ = writeln!(out, "{}", sparkline(&h.counts));
    if r.reference.fallback && h.max >= r.threshold {
        // Norms alone are no evidence: no row is called strong.
        let at = h.bin_of(r.threshold);
        let _ = writeln!(
            out,
            "{}^ {:.1}: {} rows score past it on norms alone, which is no evidence that they are untrained: none is called strong",
            " ".repeat(at),
            r.threshold,
            count(r.strong as u64),
        );
    } else if h.max >= r.threshold {
        let at = h.bin_of(r.threshold);
        let _ = writeln!(
            out,
            "{}^ strong from {:.1}: {} rows ({} outside the reference set)",
            " ".repeat(at),
            r.threshold,
            count(r.strong as u64),
            count(r.strong_outside_reference as u64)
        );
    } else {
        let _ = writeln!(
            out,
            "no row reaches the strong threshold {:.1} (highest score {:.2})",
            r.threshold, h.max
        );
    }
    let lo = format!("{:.2}", h.min);
    let hi = format!("{:.2}", h.max);
    let gap = width.saturating_sub(lo.len() + hi.len()).max(1);
    let _ = writeln!(
        out,
        "{}",
        style.dim(&format!("{lo}{}{hi}", " ".repeat(gap)))
    );
}

/// A candidate's kind as text and the page name it.
pub(crate) fn token_kind(k: Option<TokenKind>) -> &'static str {
    match k {
        Some(TokenKind::Special) => "special",
        Some(TokenKind::Byte) => "byte",
        Some(TokenKind::PartialUtf8) => "partial-utf8",
        Some(TokenKind::Normal) => "normal",
        None => "-",
    }
}

/// The indicator columns the candidates carry: (header, value).
type Column = (&'static str, fn(&Candidate) -> Option<f32>);

const COLUMNS: [Column; 4] = [
    ("head cos", |c| c.head_cosine),
    ("head norm", |c| c.head_norm),
    ("emb norm", |c| c.embed_norm),
    ("emb dist", |c| c.embed_distance),
];

impl Human for UndertrainedReport {
    fn human(&self, style: &Style) -> String {
        let mut out = String::new();
        let matrices: Vec<String> = match (&self.embedding, &self.head) {
            (Some(e), Some(h)) if e == h => vec![format!("`{e}` (embedding and tied head)")],
            (e, h) => e
                .iter()
                .map(|e| format!("embedding `{e}`"))
                .chain(h.iter().map(|h| format!("head `{h}`")))
                .collect(),
        };
        let _ = writeln!(
            out,
            "{}  {}, {} rows",
            style.bold("undertrained"),
            matrices.join(", "),
            count(self.rows as u64)
        );
        let r = &self.reference;
        let origin = match (r.source, r.identical) {
            ("auto", 0) => format!(
                "{} reserved placeholders, {} rows without a token",
                count(r.placeholders as u64),
                count(r.unreachable as u64)
            ),
            ("auto", _) => "in groups of byte-identical rows".to_string(),
            _ => "from --reference".to_string(),
        };
        let _ = match r.fallback {
            true => writeln!(
                out,
                "reference     none: scores from the norms alone, a fallback in which a high score says a row is small, not that it is untrained"
            ),
            false => writeln!(
                out,
                "reference     {} rows ({origin}), {} of them look untrained; candidates are the rows outside it",
                count(r.rows as u64),
                count(r.strong as u64)
            ),
        };
        let component = match self.component_rows {
            0 => String::new(),
            n => format!(
                ", the head's first principal component from {} sampled rows in {} iterations",
                count(n as u64),
                self.component_iterations
            ),
        };
        let _ = writeln!(
            out,
            "score         mean robust z of {}; {} streaming pass(es){component}",
            self.indicators.join(", "),
            self.passes,
        );
        out.push('\n');
        chart(self, style, &mut out);
        if self.candidates.is_empty() {
            return out;
        }
        out.push('\n');
        let first = &self.candidates[0];
        let columns: Vec<&Column> = COLUMNS.iter().filter(|(_, f)| f(first).is_some()).collect();
        let mut header = vec!["rank", "id", "token", "kind", "ref", "reach", "score"];
        header.extend(columns.iter().map(|(h, _)| *h));
        let right: Vec<usize> = [0, 1, 6].into_iter().chain(7..header.len()).collect();
        let rows = self
            .candidates
            .iter()
            .map(|c| {
                let mut row = vec![
                    c.rank.to_string(),
                    c.id.to_string(),
                    c.token
                        .as_deref()
                        .map_or_else(|| "-".into(), |t| format!("\"{t}\"")),
                    token_kind(c.kind).to_string(),
                    if c.reference { "ref" } else { "" }.to_string(),
                    match c.reachable {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "-",
                    }
                    .to_string(),
                    format!(
                        "{:.2}{}",
                        c.score,
                        if c.strong && !self.reference.fallback {
                            "*"
                        } else {
                            " "
                        }
                    ),
                ];
                row.extend(
                    columns
                        .iter()
                        .map(|(_, f)| f(c).map_or_else(|| "-".into(), |v| format!("{v:.4}"))),
                );
                row
            })
            .collect();
        out.push_str(&table(&header, &right, rows));
        let strong = match self.reference.fallback {
            true => "",
            false => "* strong candidate; ",
        };
        let _ = writeln!(
            out,
            "{}",
            style.dim(&format!(
                "{strong}ref: in the reference set; reach: some text encodes to it"
            ))
        );
        out
    }
}

/// Most candidates the picture names.
const PLOTTED: usize = 25;

/// How a candidate is named in the picture: its id and token.
fn named(c: &Candidate) -> String {
    match &c.token {
        Some(t) => format!("{} \"{t}\"", c.id),
        None => c.id.to_string(),
    }
}

/// The picture: the histogram of every row's score (log counts when they
/// span decades) with the strong threshold, and beside it the top
/// candidates by score, named.
pub fn undertrained_svg(r: &UndertrainedReport) -> String {
    let strong = format!("strong from {:.1}", r.threshold);
    let cuts = [Cut {
        at: r.threshold,
        label: &strong,
    }];
    let h = &r.histogram;
    let title = format!("score of {} rows", count(r.scored as u64));
    let histogram = svg::Histogram {
        title: &title,
        x_label: "score (mean robust z; higher looks untrained)",
        y_label: "rows",
        min: h.min,
        max: h.max,
        counts: &h.counts,
        subsets: &[],
        cuts: &cuts,
    };
    let items: Vec<(String, f64)> = (r.candidates.iter().take(PLOTTED))
        .map(|c| (named(c), c.score))
        .collect();
    let ranking_title = format!("top {} by score", items.len());
    let ranking = Ranking {
        title: &ranking_title,
        value_label: "score",
        items: &items,
        cut: Some(cuts[0].clone()),
        decimals: 2,
    };
    let (w, h) = (560.0, ranking.height().max(360.0));
    let mut svg = Svg::new(2.0 * w + 10.0, h + 24.0);
    histogram.draw(&mut svg, Rect::new(0.0, 0.0, w, 360.0));
    if !items.is_empty() {
        ranking.draw(&mut svg, Rect::new(w + 10.0, 0.0, w, h));
    }
    svg.caption(&format!(
        "embscope undertrained: {}, indicators {}",
        r.model,
        r.indicators.join(", ")
    ));
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cmd::undertrained::Histogram;

    #[test]
    fn sparkline_heights_are_logarithmic() {
        let h = Histogram {
            min: 0.0,
            max: 1.0,
            counts: vec![1000, 0, 1, 10, 31],
        };
        assert_eq!(sparkline(&h.counts), "█ ▁▃▄");
        let one = Histogram {
            min: 0.0,
            max: 1.0,
            counts: vec![1, 0],
        };
        assert_eq!(sparkline(&one.counts), "█ ");
    }
}
