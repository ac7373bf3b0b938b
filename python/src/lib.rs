//! The `embscope` Python module: a checkpoint opened once, the commands'
//! reports as dicts, rows as numpy arrays, and the command line run
//! in-process for the console script. Every figure comes from the
//! embscope library; this crate only reads Python arguments into its
//! requests and hands its reports back. Scans run with the GIL released.
//!
//! | file | what it owns |
//! |---|---|
//! | `lib.rs` | the module: `open`, `diff`, `main`, `Error` and `Note` |
//! | `model.rs` | `Model`: an opened checkpoint and the commands on it |
//! | `args.rs` | Python arguments read into the library's requests |
//! | `out.rs` | reports handed to Python: dicts, lists, numpy arrays, notes |

mod args;
mod model;
mod out;

use std::ffi::OsString;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyUserWarning};
use pyo3::prelude::*;

use model::Model;

/// Bounds what a chat template's render may allocate, as in the binary.
#[global_allocator]
static ALLOC: embscope::alloc_budget::Budgeted = embscope::alloc_budget::Budgeted;

create_exception!(
    embscope,
    Error,
    PyException,
    "What embscope refused: bad input or a bad file, with the command line's one-line message."
);

create_exception!(
    embscope,
    Note,
    PyUserWarning,
    "What the command line says on stderr as `note: ...`: how a MODEL was located or a word resolved."
);

/// An embscope error as the Python exception, with its one-line message.
pub(crate) fn error(e: embscope::Error) -> PyErr {
    Error::new_err(e.to_string())
}

/// Opens MODEL (any the command line takes: a directory, a safetensors or
/// GGUF file, an index, a Hub id in the local cache at `revision`, an
/// Ollama name). Reads headers and config only.
#[pyfunction]
#[pyo3(signature = (model, revision=None))]
fn open(py: Python<'_>, model: &str, revision: Option<&str>) -> PyResult<Model> {
    Model::open(py, model, revision)
}

/// What a fine-tune changed in the vocabulary layers, as `embscope diff
/// --json` prints it: `base` and `tuned` are MODELs or opened models;
/// `matrix` compares one matrix only; `top` changed rows are listed;
/// `by_id` pairs rows by id even when both have a tokenizer.
#[pyfunction]
#[pyo3(signature = (base, tuned, *, matrix=None, top=10, by_id=false))]
fn diff<'py>(
    py: Python<'py>,
    base: args::ModelArg,
    tuned: args::ModelArg,
    matrix: Option<&str>,
    top: usize,
    by_id: bool,
) -> PyResult<Bound<'py, PyAny>> {
    let req = embscope::cmd::diff::Request {
        matrix: args::matrices(matrix)?,
        top,
        by_id,
        progress: false,
    };
    let (base, tuned) = (base.open(py)?, tuned.open(py)?);
    base.get().sound()?;
    tuned.get().sound()?;
    let (doc, notes) = py
        .detach(|| -> embscope::Result<_> {
            let (report, mut notes) = Model::diff(base.get(), tuned.get(), &req)?;
            notes.extend(report.notes.iter().cloned());
            Ok((out::json(&report), notes))
        })
        .map_err(error)?;
    out::warn(py, &notes)?;
    out::loads(py, &doc?)
}

/// Runs the command line on `argv` (the program name first) in this
/// process, printing as the binary does; returns its exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| embscope::cli::main(argv))
}

/// The module, `embscope._embscope`, that `embscope/__init__.py` re-exports.
#[pymodule]
fn _embscope(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("Error", py.get_type::<Error>())?;
    m.add("Note", py.get_type::<Note>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<Model>()?;
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(diff, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    Ok(())
}
