//! `embscope.Model`: a checkpoint opened once (files mapped, headers,
//! config and roles read), the tokenizer loaded when a call first needs
//! it, and the commands on it. Each method reads its arguments, runs the
//! library's command with the GIL released, and hands the report back as
//! the command's `--json` dict, or its rows as numpy arrays.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::PyList;

use embscope::checkpoint::locate::locate;
use embscope::checkpoint::{Checkpoint, Faults, Unreadable};
use embscope::cmd::lookup::Query as Rows;
use embscope::cmd::neighbors::{NeighborsReport, QuerySpec, Request};
use embscope::cmd::tensors::SortBy;
use embscope::cmd::undertrained::{self, ReferenceSpec};
use embscope::cmd::{self, check, lenient_vocab, load_vocab, load_vocab_with, neighbors};
use embscope::query::{encode_text, token_row};
use embscope::roles::{Roles, Which};
use embscope::vocab::Vocab;

use crate::args::{self, Filters, Queries, Reference};
use crate::{error, out};

/// An opened checkpoint: `embscope.open(model)` returns one.
#[pyclass(frozen, module = "embscope")]
pub struct Model {
    ckpt: Checkpoint,
    roles: Roles,
    /// Loaded by the first call that needs it; a failed load is tried
    /// again by the next (and is a note or an error as that call needs).
    vocab: OnceLock<Option<Vocab>>,
}

impl Model {
    /// Locates and opens `model`, warning the notes the command line
    /// prints on the way.
    pub fn open(py: Python<'_>, model: &str, revision: Option<&str>) -> PyResult<Model> {
        let (opened, mut notes) = py
            .detach(|| -> embscope::Result<_> {
                let mut notes = Vec::new();
                if revision.is_some() && Path::new(model).exists() {
                    notes.push(format!(
                        "revision applies to Hub ids only; ignored for {model}"
                    ));
                }
                let sources = locate(model, revision.unwrap_or("main"))?;
                // A tensor name given twice is kept for `check` to audit,
                // and refused by every other call (see `sound`).
                let ckpt = Checkpoint::open_located_with(model, sources, Faults::Record)?;
                let roles = Roles::resolve(&ckpt);
                Ok(((ckpt, roles), notes))
            })
            .map_err(error)?;
        let (ckpt, roles) = opened;
        notes.extend(ckpt.sources.notes.iter().cloned());
        // Side files opening could not read (a malformed config.json): no
        // call but `check`, which reports them, needs one.
        notes.extend(ckpt.unreadable.iter().map(Unreadable::note));
        out::warn(py, &notes)?;
        Ok(Model {
            ckpt,
            roles,
            vocab: OnceLock::new(),
        })
    }

    /// Refuses a file that gives a tensor name twice, as every command
    /// but `check` does: opened so that `check` can audit it, it is an
    /// error for every other call, with the command line's message.
    pub fn sound(&self) -> PyResult<()> {
        match self.ckpt.duplicate_names.first() {
            Some(d) => Err(error(embscope::Error::bad_file(&d.file, d.fault.clone()))),
            None => Ok(()),
        }
    }

    /// The vocabulary, loaded on first use.
    fn vocab(&self) -> embscope::Result<Option<&Vocab>> {
        if let Some(v) = self.vocab.get() {
            return Ok(v.as_ref());
        }
        let loaded = load_vocab(&self.ckpt)?;
        Ok(self.vocab.get_or_init(|| loaded).as_ref())
    }

    /// The vocabulary for a call fed by it (word and text queries, `diff`):
    /// a tokenizer file that cannot be read is the error; a special-token
    /// file that cannot be read feeds no query, and is a note.
    fn needed_vocab(&self, notes: &mut Vec<String>) -> embscope::Result<Option<&Vocab>> {
        let vocab = self.vocab()?;
        notes.extend(lenient_vocab(&self.ckpt, Ok(vocab))?.1);
        Ok(vocab)
    }

    /// The vocabulary for a call that can do without one (rows by id,
    /// `info`): tokenizer files that cannot be read are notes, and the
    /// call goes on without them, as the command line does.
    fn optional_vocab(&self, notes: &mut Vec<String>) -> embscope::Result<Option<&Vocab>> {
        let (vocab, left_out) = lenient_vocab(&self.ckpt, self.vocab())?;
        notes.extend(left_out);
        Ok(vocab)
    }

    /// The rows `queries` and `text` name in the `which` matrix, with the
    /// notes on how words resolved.
    fn ids(
        &self,
        queries: &[String],
        text: Option<&str>,
        which: Which,
    ) -> embscope::Result<(Vec<u32>, Vec<String>)> {
        let t = self.roles.matrix(&self.ckpt, which)?;
        let m = self.ckpt.matrix(t)?;
        let mut notes = Vec::new();
        let vocab = match text.is_some() || args::need_vocab(queries) {
            true => self.needed_vocab(&mut notes)?,
            false => None,
        };
        let mut ids = queries
            .iter()
            .map(|q| token_row(&self.ckpt, &m, vocab, q, &mut notes))
            .collect::<embscope::Result<Vec<u32>>>()?;
        if let Some(text) = text {
            ids.extend(encode_text(
                &self.ckpt,
                vocab,
                text,
                false,
                "query rows as #ID",
            )?);
        }
        Ok((ids, notes))
    }

    /// `neighbors`, loading the tokenizer alongside the scan when the
    /// queries do not need it first (rows by id), as the command line does;
    /// with the notes on the files the load could not read.
    fn search(
        &self,
        req: &Request,
        which: Which,
    ) -> embscope::Result<(NeighborsReport, Vec<String>)> {
        let (ckpt, roles) = (&self.ckpt, &self.roles);
        let mut notes = Vec::new();
        if req.needs_vocab() {
            let vocab = self.needed_vocab(&mut notes)?;
            return Ok((neighbors::run(ckpt, roles, vocab, which, req)?, notes));
        }
        let report = std::thread::scope(|s| {
            let loading = s.spawn(|| self.optional_vocab(&mut notes));
            let report = neighbors::run(ckpt, roles, None, which, req);
            let vocab = loading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            let mut report = report?;
            if let Some(v) = vocab {
                report.name_tokens(v);
            }
            Ok::<_, embscope::Error>(report)
        })?;
        Ok((report, notes))
    }

    /// `diff` of `tuned` against `base`, their tokenizers loaded side by
    /// side when a call has not loaded them yet; with the notes on the
    /// files those loads could not read, base's first.
    pub fn diff(
        base: &Model,
        tuned: &Model,
        req: &cmd::diff::Request,
    ) -> embscope::Result<(cmd::diff::DiffReport, Vec<String>)> {
        let (mut notes, mut tuned_notes) = (Vec::new(), Vec::new());
        let (base_vocab, tuned_vocab) = std::thread::scope(|s| {
            let loading = s.spawn(|| base.needed_vocab(&mut notes));
            let tuned_vocab = tuned.needed_vocab(&mut tuned_notes);
            let base_vocab = loading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (base_vocab, tuned_vocab)
        });
        notes.append(&mut tuned_notes);
        let base = cmd::diff::Model {
            ckpt: &base.ckpt,
            roles: &base.roles,
            vocab: base_vocab?,
        };
        let tuned = cmd::diff::Model {
            ckpt: &tuned.ckpt,
            roles: &tuned.roles,
            vocab: tuned_vocab?,
        };
        Ok((cmd::diff::run(base, tuned, req)?, notes))
    }

    /// The under-trained scoring of `req`, its tokenizer loaded while the
    /// first reads of the matrices run (a load of its own: the scoring
    /// keeps what it loads); with the notes on the files the load could
    /// not read, which the scores do without, as without a tokenizer.
    fn scored(
        &self,
        req: &undertrained::Request,
    ) -> embscope::Result<(undertrained::UndertrainedReport, Vec<String>)> {
        let keep_merges = req.tests_reachability();
        let mut notes = Vec::new();
        let load = |preview: &mut dyn FnMut(&embscope::vocab::Preview)| {
            let loaded = load_vocab_with(&self.ckpt, |dir, config| {
                Vocab::load_previewing(dir, config, keep_merges, preview)
            });
            let (vocab, left_out) = lenient_vocab(&self.ckpt, loaded)?;
            notes = left_out;
            Ok::<_, embscope::Error>(vocab)
        };
        let report = undertrained::run_loading(&self.ckpt, &self.roles, load, req)?;
        Ok((report, notes))
    }
}

#[pymethods]
impl Model {
    /// What the checkpoint holds, as `embscope info --json` prints it.
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let (doc, notes) = py
            .detach(|| -> embscope::Result<_> {
                let mut roles = self.roles.clone();
                roles.compare_head(&self.ckpt);
                let mut notes = Vec::new();
                let vocab = self.optional_vocab(&mut notes)?;
                let report = cmd::info::run(&self.ckpt, &roles, vocab);
                Ok((out::json(&report), notes))
            })
            .map_err(error)?;
        out::warn(py, &notes)?;
        out::loads(py, &doc?)
    }

    /// One entry per tensor, as `embscope tensors --json` prints them;
    /// `filter` keeps the names matching a glob.
    #[pyo3(signature = (filter=None))]
    fn tensors<'py>(&self, py: Python<'py>, filter: Option<&str>) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let report = cmd::tensors::run(&self.ckpt, filter, SortBy::Name).map_err(error)?;
        out::loads(py, &out::json(&report)?)
    }

    /// Parameters and bytes of the vocabulary layers, as `embscope size
    /// --json` prints them.
    fn size<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let report = cmd::size::run(&self.ckpt, &self.roles, &Default::default()).map_err(error)?;
        out::loads(py, &out::json(&report)?)
    }

    /// The row ids that `queries` (an id, a word, `=entry`, `#ID`, or a
    /// list of them) and the tokens of `text` name, in order.
    #[pyo3(signature = (queries=None, *, text=None, matrix="embed"))]
    fn resolve(
        &self,
        py: Python<'_>,
        queries: Option<Queries>,
        text: Option<&str>,
        matrix: &str,
    ) -> PyResult<Vec<u32>> {
        self.sound()?;
        let which = args::matrix(matrix)?;
        let (queries, _) = queries.map_or(Ok((Vec::new(), false)), Queries::specs)?;
        let (ids, notes) = py
            .detach(|| self.ids(&queries, text, which))
            .map_err(error)?;
        out::warn(py, &notes)?;
        Ok(ids)
    }

    /// The stored rows of the tokens `queries` and `text` name (as
    /// `resolve`) as a float32 array (n, hidden), a copy.
    #[pyo3(signature = (queries=None, *, text=None, matrix="embed"))]
    fn lookup<'py>(
        &self,
        py: Python<'py>,
        queries: Option<Queries>,
        text: Option<&str>,
        matrix: &str,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let which = args::matrix(matrix)?;
        let (queries, _) = queries.map_or(Ok((Vec::new(), false)), Queries::specs)?;
        let (report, notes) = py
            .detach(|| -> embscope::Result<_> {
                let (ids, notes) = self.ids(&queries, text, which)?;
                let asked = Rows::Ids(ids.iter().map(|&id| (id.into(), id.into())).collect());
                let report = cmd::lookup::run(&self.ckpt, &self.roles, None, which, &asked)?;
                Ok((report, notes))
            })
            .map_err(error)?;
        out::warn(py, &notes)?;
        let rows: Vec<Vec<f32>> = report.rows.into_iter().map(|r| r.values).collect();
        out::matrix(py, &rows, report.shape[1])
    }

    /// The nearest rows of `query` (an id, a word, `#ID`, an expression
    /// `king - man + woman`) or of the mean of `text`'s tokens: a list of
    /// dicts (rank, id, token, score), the `results` of `embscope neighbors
    /// --json`. A list of queries gives a list of such lists, found in one
    /// pass over the matrix.
    #[pyo3(signature = (
        query=None, *, text=None, k=10, metric="cosine", matrix="embed",
        include_query=false, filter=None
    ))]
    #[allow(clippy::too_many_arguments)]
    fn neighbors<'py>(
        &self,
        py: Python<'py>,
        query: Option<Queries>,
        text: Option<String>,
        k: usize,
        metric: &str,
        matrix: &str,
        include_query: bool,
        filter: Option<Filters>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let which = args::matrix(matrix)?;
        let (queries, one) = match (query, &text) {
            (Some(q), None) => q.specs()?,
            (None, Some(_)) => (Vec::new(), true),
            (None, None) => return Err(crate::Error::new_err("no query: give a query or text=")),
            (Some(_), Some(_)) => {
                return Err(crate::Error::new_err("give a query or text=, not both"));
            }
        };
        let req = Request {
            queries: (queries.into_iter().map(QuerySpec::Expr))
                .chain(text.map(QuerySpec::Text))
                .collect(),
            batch: None,
            k,
            metric: args::metric(metric)?,
            include_query,
            filters: filter.map_or(Ok(Vec::new()), Filters::read)?,
            progress: false,
        };
        let (doc, notes) = py
            .detach(|| -> embscope::Result<_> {
                let (report, mut notes) = self.search(&req, which)?;
                let results: Vec<_> = report.queries.iter().map(|a| &a.results).collect();
                notes.extend(report.notes);
                Ok((out::json(&results), notes))
            })
            .map_err(error)?;
        out::warn(py, &notes)?;
        let lists = out::loads(py, &doc?)?;
        match one {
            true => lists.cast_into::<PyList>()?.get_item(0),
            false => Ok(lists),
        }
    }

    /// The consistency audit, as `embscope check --json` prints it.
    /// `chat_template` checks that template (a `.jinja` or JSON file, or
    /// another MODEL) against this model's rows instead of its own, as
    /// `--chat-template`; `data` counts the untrained-looking tokens of
    /// training data files (text or JSONL), as `--data`.
    #[pyo3(signature = (*, chat_template=None, data=None))]
    fn check<'py>(
        &self,
        py: Python<'py>,
        chat_template: Option<String>,
        data: Option<Vec<PathBuf>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let doc = py
            .detach(|| -> embscope::Result<_> {
                let data = (data.iter().flatten())
                    .map(|p| check::DataFile::open(p))
                    .collect::<embscope::Result<Vec<_>>>()?;
                let mut roles = self.roles.clone();
                roles.compare_head(&self.ckpt);
                let load = || load_vocab(&self.ckpt);
                let templates = match &chat_template {
                    Some(arg) => check::Templates::given(arg)?,
                    None => check::Templates::of_model(&self.ckpt),
                };
                let training = check::Training { templates, data };
                let report = check::run(
                    &self.ckpt,
                    &roles,
                    &training,
                    false,
                    load,
                    |_| Ok::<_, embscope::Error>(()),
                    |_| Ok(()),
                )?;
                Ok(out::json(&report))
            })
            .map_err(error)??;
        out::loads(py, &doc)
    }

    /// Rows ranked by how untrained they look, as `embscope undertrained
    /// --json` prints them. `matrix` scores one matrix only; `reference`
    /// is `"auto"`, ids as `--reference` writes them, or a list of ids;
    /// `include_reference` lists the reference rows after the others.
    #[pyo3(signature = (top=30, *, matrix=None, reference=None, reachability=true, include_reference=false))]
    fn undertrained<'py>(
        &self,
        py: Python<'py>,
        top: usize,
        matrix: Option<&str>,
        reference: Option<Reference>,
        reachability: bool,
        include_reference: bool,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let req = undertrained::Request {
            top,
            matrix: matrix.map(args::matrix).transpose()?,
            reference: reference.map_or(Ok(ReferenceSpec::Auto), Reference::read)?,
            reachability,
            include_reference,
            progress: false,
        };
        let (doc, notes) = py
            .detach(|| {
                self.scored(&req)
                    .map(|(report, notes)| (out::json(&report), notes))
            })
            .map_err(error)?;
        out::warn(py, &notes)?;
        out::loads(py, &doc?)
    }

    /// Every row's figures, as `embscope rows` writes them: a dict of
    /// numpy arrays, one per column (`id`, `token`, `kind`, `embed_norm`,
    /// `head_norm`, `head_cosine`, `embed_distance`, `score`, `strong`,
    /// `reference`); `pandas.DataFrame(m.rows())` makes a frame of them.
    #[pyo3(signature = (*, reference=None))]
    fn rows<'py>(
        &self,
        py: Python<'py>,
        reference: Option<Reference>,
    ) -> PyResult<Bound<'py, PyAny>> {
        self.sound()?;
        let req = undertrained::Request {
            top: 0,
            matrix: None,
            reference: reference.map_or(Ok(ReferenceSpec::Auto), Reference::read)?,
            reachability: false,
            include_reference: true,
            progress: false,
        };
        let (report, notes) = py
            .detach(|| -> embscope::Result<_> {
                let (scored, mut notes) = self.scored(&req)?;
                // The scoring's notes the command prints without `-v`: the
                // columns have no place for them.
                let scoring = scored.notes.into_iter().filter(|n| !n.detail);
                notes.extend(scoring.map(|n| n.text));
                let report = cmd::rows::run(cmd::rows::Scored {
                    model: scored.model,
                    embedding: scored.embedding,
                    head: scored.head,
                    indicators: scored.indicators,
                    every_row: scored.every_row,
                });
                Ok((report, notes))
            })
            .map_err(error)?;
        out::warn(py, &notes)?;
        Ok(out::row_columns(py, report)?.into_any())
    }

    fn __repr__(&self) -> String {
        format!("embscope.Model({:?})", self.ckpt.model)
    }
}
