//! Text for `neighbors`: one block per query, a ranked table each.

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
                        format!("{:.4}", n.score),
                    ]
                })
                .collect();
            out.push_str(&table(&["rank", "id", "token", "score"], &[0, 1, 3], rows));
        }
        out
    }
}
