//! Text for `tensors`.

use super::{Human, Style, bytes, count, shape, table};
use crate::cmd::tensors::TensorsReport;

impl Human for TensorsReport {
    fn human(&self, style: &Style) -> String {
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
        let mut out = table(
            &["name", "dtype", "shape", "params", "bytes", "file"],
            &[3, 4],
            rows,
        );
        out.push_str(&style.dim(&format!(
            "{} tensors, {} parameters, {}\n",
            self.count,
            count(self.total_params),
            bytes(self.total_bytes)
        )));
        out
    }
}

/// The last path component: the table is read beside `info`, which shows full paths.
pub(super) fn file_name(path: &str) -> String {
    std::path::Path::new(path)
        .file_name()
        .map_or_else(|| path.to_string(), |n| n.to_string_lossy().into_owned())
}
