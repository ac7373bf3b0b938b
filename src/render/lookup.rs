//! Output of `lookup`: a table, JSON, CSV, or a `[n, d]` float32 `.npy`.

use std::path::Path;

use super::{Style, plural, table};
use crate::cmd::lookup::LookupReport;
use crate::{Error, Result};

/// Values shown per row in the table unless `--full`.
const PREVIEW: usize = 8;

/// Renders the table, with all values when `full`.
pub fn lookup_table(r: &LookupReport, full: bool, style: &Style) -> String {
    let rows = r
        .rows
        .iter()
        .map(|row| {
            let shown = if full {
                row.values.len()
            } else {
                PREVIEW.min(row.values.len())
            };
            let mut vals: Vec<String> = row.values[..shown].iter().map(|v| v.to_string()).collect();
            if shown < row.values.len() {
                vals.push(format!("… ({} more)", row.values.len() - shown));
            }
            let mut cells = vec![row.id.to_string()];
            if r.tokenizer {
                cells.push(row.token.as_deref().map_or_else(|| "?".into(), quote));
            }
            cells.extend([format!("{:.4}", row.norm), vals.join(" ")]);
            cells
        })
        .collect();
    // Without a tokenizer no row has a token: no column, one word below.
    let (header, right, note): (&[&str], &[usize], &str) = if r.tokenizer {
        (&["id", "token", "norm", "values"], &[0, 2], "")
    } else {
        (&["id", "norm", "values"], &[0, 1], "; no tokenizer")
    };
    let mut out = table(header, right, rows);
    out.push_str(&style.dim(&format!(
        "{} of `{}` ({}, {} × {}){note}\n",
        plural(r.rows.len(), "row"),
        r.matrix,
        r.dtype,
        r.shape[0],
        r.shape[1]
    )));
    out
}

/// A token shown between quotes, so leading spaces are visible (control
/// characters are already escaped by the vocabulary's readable form).
fn quote(t: &str) -> String {
    format!("\"{t}\"")
}

/// CSV: `id,token,norm,v0..v{d-1}`, one line per row.
pub fn lookup_csv(r: &LookupReport) -> Result<Vec<u8>> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let d = r.shape[1];
    let header = ["id", "token", "norm"]
        .into_iter()
        .map(String::from)
        .chain((0..d).map(|i| format!("v{i}")));
    let csv_err = |e: csv::Error| Error::BadInput(format!("cannot write CSV: {e}"));
    w.write_record(header).map_err(csv_err)?;
    for row in &r.rows {
        let fields = [
            row.id.to_string(),
            row.token.clone().unwrap_or_default(),
            row.norm.to_string(),
        ]
        .into_iter()
        .chain(row.values.iter().map(|v| v.to_string()));
        w.write_record(fields).map_err(csv_err)?;
    }
    w.into_inner()
        .map_err(|e| Error::BadInput(format!("cannot write CSV: {e}")))
}

/// Writes the rows as a `[n, d]` float32 array in numpy's `.npy` format.
pub fn lookup_npy(r: &LookupReport, path: &Path) -> Result<()> {
    let values: Vec<f32> = r
        .rows
        .iter()
        .flat_map(|row| row.values.iter().copied())
        .collect();
    let write_err = |e: candle_core::Error| Error::Write {
        path: path.to_path_buf(),
        err: std::io::Error::other(e.to_string()),
    };
    let t = candle_core::Tensor::from_vec(
        values,
        (r.rows.len(), r.shape[1]),
        &candle_core::Device::Cpu,
    )
    .map_err(write_err)?;
    t.write_npy(path).map_err(write_err)
}
