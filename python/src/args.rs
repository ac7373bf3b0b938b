//! Python arguments read into the library's plain requests: queries (ints
//! and strings, one or a list), the names of matrices, metrics and
//! filters as the command line spells them, and reference sets. A value
//! that is not one of the names is an `embscope.Error` naming what was
//! expected, as the command line's is.

use pyo3::prelude::*;

use embscope::cmd::neighbors::{Filter, QuerySpec};
use embscope::cmd::undertrained::ReferenceSpec;
use embscope::roles::Which;
use embscope::search::Metric;
use embscope::usage;

use crate::Error;
use crate::model::Model;

/// One query: a row id, or a string as `neighbors` takes it (a word,
/// `=entry`, `#ID`, an expression).
#[derive(FromPyObject)]
pub enum Query {
    /// A row id.
    Id(i64),
    /// A word, `=entry`, `#ID` or expression.
    Word(String),
}

/// One query, or a list of them.
#[derive(FromPyObject)]
pub enum Queries {
    /// A single query: answered as one.
    One(Query),
    /// A list (or any sequence) of queries: answered as a list.
    Many(Vec<Query>),
}

impl Queries {
    /// The queries as the library writes them (an id `n` is `#n`), and
    /// whether one was given alone.
    pub fn specs(self) -> PyResult<(Vec<String>, bool)> {
        match self {
            Queries::One(q) => Ok((vec![q.spec()?], true)),
            Queries::Many(qs) => Ok((
                qs.into_iter().map(Query::spec).collect::<PyResult<_>>()?,
                false,
            )),
        }
    }
}

impl Query {
    fn spec(self) -> PyResult<String> {
        match self {
            Query::Id(n) if n < 0 => Err(Error::new_err(format!(
                "ids are non-negative integers, not `{n}`"
            ))),
            Query::Id(n) => Ok(format!("#{n}")),
            Query::Word(w) => Ok(w),
        }
    }
}

/// Whether resolving `queries` needs the tokenizer.
pub fn need_vocab(queries: &[String]) -> bool {
    queries
        .iter()
        .any(|q| QuerySpec::Expr(q.clone()).needs_vocab())
}

/// `"embed"` or `"head"`, as `--matrix` takes them.
pub fn matrix(name: &str) -> PyResult<Which> {
    match name {
        "embed" => Ok(Which::Embed),
        "head" => Ok(Which::Head),
        _ => Err(expected("matrix", name, "\"embed\" or \"head\"")),
    }
}

/// `None` (both), `"both"`, `"embed"` or `"head"`, as `diff --matrix`
/// takes them: the matrices compared, `None` for both.
pub fn matrices(name: Option<&str>) -> PyResult<Option<Which>> {
    match name {
        None | Some("both") => Ok(None),
        Some("embed") => Ok(Some(Which::Embed)),
        Some("head") => Ok(Some(Which::Head)),
        Some(other) => Err(expected("matrix", other, "\"embed\", \"head\" or \"both\"")),
    }
}

/// A MODEL to open, or a model opened already.
#[derive(FromPyObject)]
pub enum ModelArg {
    /// An opened model.
    Opened(Py<Model>),
    /// A MODEL, as `embscope.open` takes it.
    Name(String),
}

impl ModelArg {
    /// The model, opened when it was named.
    pub fn open(self, py: Python<'_>) -> PyResult<Py<Model>> {
        match self {
            ModelArg::Opened(m) => Ok(m),
            ModelArg::Name(name) => Py::new(py, Model::open(py, &name, None)?),
        }
    }
}

/// `"cosine"` or `"dot"`, as `--metric` takes them.
pub fn metric(name: &str) -> PyResult<Metric> {
    match name {
        "cosine" => Ok(Metric::Cosine),
        "dot" => Ok(Metric::Dot),
        _ => Err(expected("metric", name, "\"cosine\" or \"dot\"")),
    }
}

/// Result filters as `--filter` names them: one name or a list.
#[derive(FromPyObject)]
pub enum Filters {
    /// One filter.
    One(String),
    /// Several, all applied.
    Many(Vec<String>),
}

impl Filters {
    /// The library's filters.
    pub fn read(self) -> PyResult<Vec<Filter>> {
        let names = match self {
            Filters::One(name) => vec![name],
            Filters::Many(names) => names,
        };
        names
            .iter()
            .map(|name| match name.as_str() {
                "no-special" => Ok(Filter::NoSpecial),
                "no-padding" => Ok(Filter::NoPadding),
                "letters" => Ok(Filter::Letters),
                _ => Err(expected(
                    "filter",
                    name,
                    "\"no-special\", \"no-padding\" or \"letters\"",
                )),
            })
            .collect()
    }
}

/// A reference set: `"auto"`, ids and ranges as `--reference` writes them
/// (`"0-2, 9"`), or a list of ids.
#[derive(FromPyObject)]
pub enum Reference {
    /// `"auto"` or an id list.
    Written(String),
    /// Row ids.
    Ids(Vec<u64>),
}

impl Reference {
    /// The library's reference set.
    pub fn read(self) -> PyResult<ReferenceSpec> {
        match self {
            Reference::Written(s) if s == "auto" => Ok(ReferenceSpec::Auto),
            Reference::Written(s) => usage::id_list(&s)
                .map(|ids| ReferenceSpec::Ids(ids.0))
                .map_err(|e| Error::new_err(format!("reference: {e}"))),
            Reference::Ids(ids) => Ok(ReferenceSpec::Ids(ids.iter().map(|&i| (i, i)).collect())),
        }
    }
}

/// The error for a `what` that is not one of the `names`.
fn expected(what: &str, got: &str, names: &str) -> PyErr {
    Error::new_err(format!("{what} must be {names}, not {got:?}"))
}
