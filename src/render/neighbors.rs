//! Text for `neighbors`: one block per query, a ranked table each, its
//! scores with as many decimals as tell neighbouring ranks apart.

use std::fmt::Write;

use super::{Human, Style, table};
use crate::cmd::neighbors::NeighborsReport;

impl Human for NeighborsReport {
    fn human(&self, style: &Style) -> String {
        let mut out = String::new();
        for (i, a) in self.queries.iter().enumerate() {
            if i > 0 {
                out.push('\n');
            }
            let ids: Vec<String> = a
                .ids
                .iter()
                .zip(&a.tokens)
                .map(|(id, token)| match token {
                    Some(t) => format!("#{id} \"{t}\""),
                    None => format!("#{id}"),
                })
                .collect();
            let _ = writeln!(
                out,
                "{}  {}",
                style.bold(&a.query),
                style.dim(&format!(
                    "({}, {} of `{}`)",
                    ids.join(" "),
                    self.metric,
                    self.matrix
                ))
            );
            let places = decimals(a.results.iter().map(|n| n.score));
            let rows = a
                .results
                .iter()
                .map(|n| {
                    vec![
                        n.rank.to_string(),
                        n.id.to_string(),
                        n.token
                            .as_deref()
                            .map_or_else(|| "?".into(), |t| format!("\"{t}\"")),
                        format!("{:.places$}", n.score),
                    ]
                })
                .collect();
            out.push_str(&table(&["rank", "id", "token", "score"], &[0, 1, 3], rows));
        }
        out
    }
}

/// Fewest decimals from [`MIN_DECIMALS`] on at which no two adjacent
/// scores of a ranked list that differ print alike (dot products, unlike
/// cosines, are often small: five ranks of `0.0384`), within
/// [`MAX_DECIMALS`]. The JSON carries every score whole.
fn decimals(scores: impl Iterator<Item = f32> + Clone) -> usize {
    let apart = |places: usize| {
        let shown = |s: f32| format!("{s:.places$}");
        scores
            .clone()
            .zip(scores.clone().skip(1))
            .all(|(a, b)| a == b || shown(a) != shown(b))
    };
    (MIN_DECIMALS..MAX_DECIMALS)
        .find(|&places| apart(places))
        .unwrap_or(MAX_DECIMALS)
}

/// Decimals of a score when four tell the ranks apart.
const MIN_DECIMALS: usize = 4;
/// The most decimals shown: past f32's 9 significant digits for scores
/// down to 1e-3.
const MAX_DECIMALS: usize = 12;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_tell_ranks_apart() {
        let of = |s: &[f32]| decimals(s.iter().copied());
        assert_eq!(of(&[0.9, 0.5, 0.25]), 4);
        assert_eq!(of(&[0.0384, 0.0384, 0.03841, 0.038_44]), 5);
        assert_eq!(of(&[0.038_400_1, 0.038_4]), 7);
        assert_eq!(of(&[153.25, 153.25]), 4);
        assert_eq!(of(&[]), 4);
        assert_eq!(of(&[1e-9, 2e-9]), 9);
    }
}
