//! Text for `size`.

use super::{Human, Style, bytes, count, field, percent, table};
use crate::cmd::size::SizeReport;

impl Human for SizeReport {
    fn human(&self, style: &Style) -> String {
        // Bits per weight are shown when they are not whole (GGUF quants).
        let bpw = self
            .by_dtype
            .iter()
            .any(|d| d.bits_per_weight.fract() != 0.0);
        let mut rows: Vec<Vec<String>> = self
            .by_dtype
            .iter()
            .map(|d| {
                let mut row = vec![
                    d.dtype.clone(),
                    count(d.tensors as u64),
                    count(d.params),
                    bytes(d.bytes),
                ];
                if bpw {
                    row.push(format!("{:.4}", d.bits_per_weight));
                }
                row
            })
            .collect();
        let mut total = vec![
            "total".into(),
            count(self.by_dtype.iter().map(|d| d.tensors as u64).sum()),
            count(self.total_params),
            bytes(self.total_bytes),
        ];
        if bpw {
            let all = self.total_bytes as f64 * 8.0 / self.total_params.max(1) as f64;
            total.push(format!("{all:.4}"));
        }
        rows.push(total);
        let mut out = if bpw {
            let header = ["dtype", "tensors", "params", "bytes", "bits/weight"];
            table(&header, &[1, 2, 3, 4], rows)
        } else {
            table(&["dtype", "tensors", "params", "bytes"], &[1, 2, 3], rows)
        };
        out.push('\n');
        let share = |p: u64| {
            percent(if self.total_params == 0 {
                0.0
            } else {
                p as f64 / self.total_params as f64
            })
        };
        let mut line = |label: &str, value: String| field(&mut out, style, label, &value);
        match &self.embedding {
            Some(name) => line(
                "embedding",
                format!(
                    "{} params, {}, {} of parameters  {}",
                    count(self.embedding_params),
                    bytes(self.embedding_bytes),
                    share(self.embedding_params),
                    style.dim(name)
                ),
            ),
            None => line("embedding", style.dim("none found")),
        }
        match &self.head {
            Some(name) => line(
                "head",
                format!(
                    "{} params, {}, {} of parameters  {}",
                    count(self.head_params),
                    bytes(self.head_bytes),
                    share(self.head_params),
                    style.dim(name)
                ),
            ),
            None => line("head", style.dim(self.tie_status.describe())),
        }
        line(
            "vocabulary",
            format!(
                "{} params, {}, {} of parameters",
                count(self.vocab_params),
                bytes(self.vocab_bytes),
                percent(self.vocab_share)
            ),
        );
        if let Some(t) = &self.tying {
            let (verb, of) = if t.tied {
                ("saves", "the untied size")
            } else {
                ("would save", "the file size")
            };
            line(
                "tying",
                format!(
                    "{verb} {} params, {} ({} of {of})",
                    count(t.params),
                    bytes(t.bytes),
                    percent(t.share_of_bytes)
                ),
            );
        }
        if let Some(w) = &self.what_if {
            let sign = |d: i128| if d >= 0 { "+" } else { "-" };
            let what = format!(
                "vocab {} × hidden {}, {}{}",
                count(w.vocab),
                count(w.hidden),
                if w.tied { "tied" } else { "untied" },
                w.dtype
                    .as_ref()
                    .map(|d| format!(", floats as {d}"))
                    .unwrap_or_default()
            );
            line("what if", what);
            line(
                "",
                format!(
                    "vocabulary {} params, {} of parameters; total {} params, {}",
                    count(w.embedding_params + w.head_params),
                    percent(w.vocab_share),
                    count(w.total_params),
                    bytes(w.total_bytes)
                ),
            );
            line(
                "",
                format!(
                    "change {}{} params, {}{}",
                    sign(w.delta_params),
                    count(w.delta_params.unsigned_abs() as u64),
                    sign(w.delta_bytes),
                    bytes(w.delta_bytes.unsigned_abs() as u64)
                ),
            );
        }
        out
    }
}
