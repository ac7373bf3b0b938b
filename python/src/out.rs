//! Reports handed to Python. A report becomes the dict its command's
//! `--json` prints, by the same serialisation read back with `json.loads`
//! (so a dict never differs from the document, a NaN being null in both);
//! rows become numpy arrays, copies (never views of the mapped files); notes become
//! `embscope.Note` warnings, as the command line prints them on stderr.

use std::ffi::CString;

use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde::Serialize;

use embscope::cmd::rows::RowsReport;

use crate::Note;

/// `value` serialised, as `--json` writes it; done with the GIL released.
pub fn json(value: &impl Serialize) -> PyResult<String> {
    serde_json::to_string(value).map_err(|e| crate::Error::new_err(e.to_string()))
}

/// The Python value of a JSON document made by [`json`].
pub fn loads<'py>(py: Python<'py>, json: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (json,))
}

/// Each note as an `embscope.Note` warning.
pub fn warn(py: Python<'_>, notes: &[String]) -> PyResult<()> {
    let category = py.get_type::<Note>();
    for note in notes {
        let text = CString::new(note.replace('\0', "\\0"))?;
        // Stack level 2: the warning points at the caller's line.
        PyErr::warn(py, &category, &text, 2)?;
    }
    Ok(())
}

/// `rows`, each `cols` values long, as a float32 array (rows, cols) in
/// memory numpy allocates and owns.
pub fn matrix<'py>(py: Python<'py>, rows: &[Vec<f32>], cols: usize) -> PyResult<Bound<'py, PyAny>> {
    let array = PyArray2::<f32>::zeros(py, [rows.len(), cols], false);
    {
        let mut view = array.readwrite();
        let slice = view.as_slice_mut()?;
        for (to, row) in slice.chunks_exact_mut(cols.max(1)).zip(rows) {
            to.copy_from_slice(row);
        }
    }
    Ok(array.into_any())
}

/// The columns of `rows`, each a numpy array by name, in the order of the
/// command's CSV: `token` and `kind` hold str or None, a missing figure is
/// NaN (as in its `.npy` file).
pub fn row_columns<'py>(py: Python<'py>, r: RowsReport) -> PyResult<Bound<'py, PyDict>> {
    let rows = &r.rows;
    let f32s = |pick: fn(&embscope::cmd::rows::Row) -> Option<f32>| {
        let v: Vec<f32> = rows
            .iter()
            .map(|row| pick(row).unwrap_or(f32::NAN))
            .collect();
        PyArray1::from_vec(py, v)
    };
    // Each kind's name is one Python string, shared by its rows.
    let mut kinds: Vec<(&'static str, Py<PyAny>)> = Vec::new();
    let mut kind = |name: &'static str| -> Py<PyAny> {
        if let Some((_, s)) = kinds.iter().find(|(n, _)| *n == name) {
            return s.clone_ref(py);
        }
        let s = PyString::new(py, name).into_any().unbind();
        kinds.push((name, s.clone_ref(py)));
        s
    };
    let none = || py.None();
    let d = PyDict::new(py);
    d.set_item(
        "id",
        PyArray1::from_vec(py, rows.iter().map(|row| row.id).collect()),
    )?;
    let tokens: Vec<Py<PyAny>> = rows
        .iter()
        .map(|row| match &row.token {
            Some(t) => PyString::new(py, t).into_any().unbind(),
            None => none(),
        })
        .collect();
    d.set_item("token", PyArray1::from_vec(py, tokens))?;
    let kind_names: Vec<Py<PyAny>> = rows
        .iter()
        .map(|row| row.kind.map_or_else(none, |k| kind(k.name())))
        .collect();
    d.set_item("kind", PyArray1::from_vec(py, kind_names))?;
    d.set_item("embed_norm", f32s(|row| row.embed_norm))?;
    d.set_item("head_norm", f32s(|row| row.head_norm))?;
    d.set_item("head_cosine", f32s(|row| row.head_cosine))?;
    d.set_item("embed_distance", f32s(|row| row.embed_distance))?;
    let scores: Vec<f64> = rows
        .iter()
        .map(|row| row.score.unwrap_or(f64::NAN))
        .collect();
    d.set_item("score", PyArray1::from_vec(py, scores))?;
    d.set_item(
        "strong",
        PyArray1::from_vec(py, rows.iter().map(|row| row.strong).collect()),
    )?;
    d.set_item(
        "reference",
        PyArray1::from_vec(py, rows.iter().map(|row| row.reference).collect()),
    )?;
    Ok(d)
}
