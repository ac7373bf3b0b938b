//! Text for `tensors`.

use super::{Human, Style, bytes, count, file_name, plural, shape, table};
use crate::cmd::tensors::TensorsReport;

impl Human for TensorsReport {
    fn human(&self, style: &Style) -> String {
        if self.tensors.is_empty() && self.total > 0 {
            // Nothing matched: stdout stays empty, as with `rg`; the
            // message is on stderr.
            return String::new();
        }
        let rows = self
            .tensors
            .iter()
            .map(|t| {
                vec![
                    t.name.clone(),
                    t.dtype.clone(),
                    shape(&t.shape),
                    count(t.params),
                    bytes(t.bytes),
                    file_name(&t.file),
                ]
            })
            .collect();
        // A file of no tensors (a vocabulary only) shows its totals alone.
        let mut out = match self.total {
            0 => String::new(),
            _ => table(
                &["name", "dtype", "shape", "params", "bytes", "file"],
                &[3, 4],
                rows,
            ),
        };
        out.push_str(&style.dim(&format!(
            "{}, {} parameters, {}\n",
            plural(self.count, "tensor"),
            count(self.total_params),
            bytes(self.total_bytes)
        )));
        out
    }
}
