//! A resolved command line carried out: open the model (its notes on
//! stderr), load the vocabulary where the command needs it, call the
//! command, print the report. What each command computes, and in what
//! order its work overlaps, is the library's; only what the command line
//! asked of the output is decided here.

use std::io::{self, Write as _};
use std::path::Path;

use crate::checkpoint::locate::locate;
use crate::checkpoint::{Checkpoint, Faults, Unreadable};
use crate::cmd::lookup::Query;
use crate::cmd::neighbors::{self, Batch, QuerySpec};
use crate::cmd::{self, check, diff, lenient_vocab, load_vocab, load_vocab_with, undertrained};
use crate::render;
use crate::render::file::OutputFile;
use crate::roles::Roles;
use crate::vocab::{Preview, Vocab};
use crate::{Error, Result};

use super::pages;
use super::resolve::{BatchSource, Config, Lookup, Neighbors, Out, Rows, Similarity, Task};
use crate::usage;

/// Why a run stopped early.
#[derive(Debug)]
pub enum Stop {
    /// Bad usage or bad input: printed, exit code 2.
    Error(Error),
    /// Writing stdout failed (a closed pipe ends quietly).
    Output(io::Error),
}

impl From<Error> for Stop {
    fn from(e: Error) -> Self {
        Stop::Error(e)
    }
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Output(e)
    }
}

/// Runs `config`; the exit code when it ran to the end: 0, or 1 when
/// `check` found something at or above `--fail-on`, `tensors --filter`
/// matched nothing or `diff` found a difference.
pub fn run(config: &Config) -> std::result::Result<u8, Stop> {
    let out = &config.out;
    match &config.task {
        Task::Info { model } => {
            let (ckpt, mut roles) = open(model, config)?;
            roles.compare_head(&ckpt);
            let vocab = optional_vocab(&ckpt, out)?;
            emit(&cmd::info::run(&ckpt, &roles, vocab.as_ref()), out)?;
        }
        Task::Tensors {
            model,
            filter,
            sort,
        } => {
            let ckpt = opened(model, config)?;
            let report = cmd::tensors::run(&ckpt, filter.as_deref(), *sort)?;
            emit(&report, out)?;
            // Like grep: a filter that matches nothing exits 1.
            if let (Some(glob), 0) = (filter, report.count) {
                if !out.quiet {
                    eprintln!(
                        "embscope: no tensor matches \"{glob}\" ({})",
                        render::plural(report.total, "tensor")
                    );
                }
                return Ok(1);
            }
        }
        Task::Size { model, scenario } => {
            let (ckpt, roles) = open(model, config)?;
            emit(&cmd::size::run(&ckpt, &roles, scenario)?, out)?;
        }
        Task::Lookup(l) => lookup(l, config)?,
        Task::Neighbors(n) => return neighbors(n, config),
        Task::Similarity(s) => similarity(s, config)?,
        Task::Check {
            model,
            fail_on,
            plot,
            chat_template,
            data,
        } => {
            // The picture's file is checked before any work.
            let plot = plot.as_deref().map(OutputFile::create).transpose()?;
            let data = (data.iter())
                .map(|p| check::DataFile::open(p))
                .collect::<Result<Vec<_>>>()?;
            let (ckpt, mut roles) = open_for_check(model, config)?;
            roles.compare_head(&ckpt);
            let templates = match chat_template {
                Some(arg) => check::Templates::given(arg)?,
                None => check::Templates::of_model(&ckpt),
            };
            let training = check::Training { templates, data };
            let report = check::run(
                &ckpt,
                &roles,
                &training,
                out.progress,
                || load_vocab(&ckpt),
                |early| {
                    if !out.json {
                        let text = render::check::early(early.iter().copied(), &out.style);
                        render::stdout(text.as_bytes())?;
                    }
                    Ok::<_, Stop>(())
                },
                |report| Ok(emit(report, out)?),
            )?;
            if let Some(file) = plot {
                write_whole(file, render::check::check_svg(&report).as_bytes())?;
            }
            return Ok(u8::from(report.worst().is_some_and(|w| w >= *fail_on)));
        }
        Task::Undertrained {
            model,
            request,
            plot,
        } => {
            let plot = plot.as_deref().map(OutputFile::create).transpose()?;
            let (ckpt, roles) = open(model, config)?;
            // The tokenizer loads while the first reads of the matrices
            // run, keeping its merges' places for the reachability test,
            // and showing its vocab as soon as it is read. Unreadable, the
            // scores do without it (as without a tokenizer); the note
            // waits for the passes' progress bars to be done.
            let loading = Loading::new(&ckpt, request.tests_reachability());
            let report = undertrained::run_loading(&ckpt, &roles, |p| loading.load(p), request)?;
            print_notes(out, &loading.notes());
            print_scoring_notes(out, &report.notes);
            if out.verbose {
                for s in &report.stages {
                    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
                    eprintln!(
                        "stage: {} {:.1} ms (from {:.1} ms)",
                        s.name,
                        ms(s.took),
                        ms(s.start)
                    );
                }
            }
            emit(&report, out)?;
            if let Some(file) = plot {
                write_whole(
                    file,
                    render::undertrained::undertrained_svg(&report).as_bytes(),
                )?;
            }
        }
        Task::Rows(r) => rows(r, config)?,
        Task::Diff {
            base,
            tuned,
            request,
            plot,
        } => {
            let plot = plot.as_deref().map(OutputFile::create).transpose()?;
            let report = compare(base, tuned, request, config)?;
            print_notes(out, &report.notes);
            emit(&report, out)?;
            if let Some(file) = plot {
                write_whole(file, render::diff::diff_svg(&report).as_bytes())?;
            }
            return Ok(u8::from(!report.same));
        }
        Task::Report {
            model,
            output,
            base,
            request,
        } => report(model, output, base.as_deref(), request, config)?,
        Task::Completions(shell) => render::stdout(&pages::completions(*shell))?,
        Task::Man => render::stdout(&pages::man_page()?)?,
    }
    Ok(0)
}

/// Writes `report` to stdout as `out` asks.
fn emit<R: serde::Serialize + render::Human>(report: &R, out: &Out) -> io::Result<()> {
    render::emit(report, out.json, &out.style)
}

/// Opens MODEL and names its roles (see [`opened`]).
fn open(model: &str, config: &Config) -> Result<(Checkpoint, Roles)> {
    let ckpt = opened(model, config)?;
    let roles = Roles::resolve(&ckpt);
    Ok((ckpt, roles))
}

/// Opens MODEL, with a note for each side file that could not be read: no
/// command but `check`, which reports them, needs one.
fn opened(model: &str, config: &Config) -> Result<Checkpoint> {
    let ckpt = open_checkpoint(model, config, Faults::Refuse)?;
    let notes: Vec<String> = ckpt.unreadable.iter().map(Unreadable::note).collect();
    print_notes(&config.out, &notes);
    Ok(ckpt)
}

/// Opens MODEL and names its roles for `check`, which reports what
/// [`opened`] notes, and audits past a tensor name given twice.
fn open_for_check(model: &str, config: &Config) -> Result<(Checkpoint, Roles)> {
    let ckpt = open_checkpoint(model, config, Faults::Record)?;
    let roles = Roles::resolve(&ckpt);
    Ok((ckpt, roles))
}

/// Opens MODEL at `--revision` (`main` by default), first printing on
/// stderr the notes on how it was located, and noting when a revision was
/// given for a path, where it means nothing.
fn open_checkpoint(model: &str, config: &Config, faults: Faults) -> Result<Checkpoint> {
    let revision = config.revision.as_deref();
    if revision.is_some() && Path::new(model).exists() {
        print_notes(
            &config.out,
            &[format!(
                "--revision applies to Hub ids only; ignored for {model}"
            )],
        );
    }
    let sources = locate(model, revision.unwrap_or("main"))?;
    print_notes(&config.out, &sources.notes);
    let shown = sources.notes.len();
    let ckpt = Checkpoint::open_located_with(model, sources, faults)?;
    // Notes made while opening (a split opened as its whole model).
    print_notes(&config.out, &ckpt.sources.notes[shown..]);
    Ok(ckpt)
}

/// Prints `notes` on stderr, one `note: …` line each, unless `--quiet`.
fn print_notes(out: &Out, notes: &[String]) {
    if !out.quiet {
        for note in notes {
            eprintln!("note: {note}");
        }
    }
}

/// Prints the notes of the under-trained scoring (`undertrained`,
/// `rows`), those on the method at work only with `-v`.
fn print_scoring_notes(out: &Out, notes: &[undertrained::Note]) {
    let notes: Vec<String> = (notes.iter())
        .filter(|n| out.verbose || !n.detail)
        .map(|n| n.text.clone())
        .collect();
    print_notes(out, &notes);
}

/// The vocabulary for a command fed by it (word and text queries): a
/// tokenizer file that cannot be read is the error; a special-token file
/// that cannot be read feeds no query, and is a note.
fn needed_vocab(ckpt: &Checkpoint, out: &Out) -> Result<Option<Vocab>> {
    let vocab = load_vocab(ckpt)?;
    print_notes(out, &lenient_vocab(ckpt, Ok(vocab.as_ref()))?.1);
    Ok(vocab)
}

/// The vocabulary for a command that can do without one (rows by id,
/// `info`): tokenizer files that cannot be read are notes, and the command
/// goes on without them, as it does when there are none.
fn optional_vocab(ckpt: &Checkpoint, out: &Out) -> Result<Option<Vocab>> {
    let (vocab, notes) = lenient_vocab(ckpt, load_vocab(ckpt))?;
    print_notes(out, &notes);
    Ok(vocab)
}

/// The vocabulary load of the commands that score rows (`undertrained`,
/// `rows`), which runs while the matrices are first read: the scores do
/// without an unreadable tokenizer, as without one, and the notes saying
/// so wait for the passes' progress bars to be done.
struct Loading<'c> {
    ckpt: &'c Checkpoint,
    /// Keep tokenizer.json's merges' places, for the reachability test.
    keep_merges: bool,
    notes: std::sync::Mutex<Vec<String>>,
}

impl<'c> Loading<'c> {
    fn new(ckpt: &'c Checkpoint, keep_merges: bool) -> Self {
        Loading {
            ckpt,
            keep_merges,
            notes: Default::default(),
        }
    }

    /// Loads the vocabulary, showing `preview` its entries as soon as
    /// they are read (see [`Vocab::load_previewing`]).
    fn load(&self, preview: &mut dyn FnMut(&Preview)) -> Result<Option<Vocab>> {
        let loaded = load_vocab_with(self.ckpt, |dir, config| {
            Vocab::load_previewing(dir, config, self.keep_merges, preview)
        });
        let (vocab, notes) = lenient_vocab(self.ckpt, loaded)?;
        *self.notes.lock().unwrap_or_else(|e| e.into_inner()) = notes;
        Ok(vocab)
    }

    /// The notes on the files the load could not read.
    fn notes(self) -> Vec<String> {
        self.notes.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}

/// `diff`: both models opened, and their tokenizers loaded side by side.
fn compare(
    base: &str,
    tuned: &str,
    request: &diff::Request,
    config: &Config,
) -> Result<diff::DiffReport> {
    let (base_ckpt, base_roles) = open(base, config)?;
    let (tuned_ckpt, tuned_roles) = open(tuned, config)?;
    let (base_vocab, tuned_vocab) = std::thread::scope(|s| {
        let loading = s.spawn(|| needed_vocab(&base_ckpt, &config.out));
        let tuned_vocab = needed_vocab(&tuned_ckpt, &config.out);
        let base_vocab = loading
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (base_vocab, tuned_vocab)
    });
    let model = |ckpt, roles, vocab| diff::Model { ckpt, roles, vocab };
    diff::run(
        model(&base_ckpt, &base_roles, base_vocab?.as_ref()),
        model(&tuned_ckpt, &tuned_roles, tuned_vocab?.as_ref()),
        request,
    )
}

fn lookup(l: &Lookup, config: &Config) -> std::result::Result<(), Stop> {
    use crate::render::output::Format;
    let (ckpt, roles) = open(&l.model, config)?;
    // Rows by id into a .npy file carry no token strings: no tokenizer needed.
    let vocab = match (&l.query, l.format) {
        (Query::Ids(_), Format::Npy) => None,
        (Query::Ids(_), _) => optional_vocab(&ckpt, &config.out)?,
        _ => needed_vocab(&ckpt, &config.out)?,
    };
    let report = cmd::lookup::run(&ckpt, &roles, vocab.as_ref(), l.matrix, &l.query)?;
    let bytes = match (l.format, &l.output) {
        (Format::Npy, Some(path)) => return Ok(render::lookup::lookup_npy(&report, path)?),
        (Format::Npy, None) => unreachable!("lookup_format refuses npy without -o"),
        (Format::Json, _) => render::json(&report)?,
        (Format::Csv, _) => render::lookup::lookup_csv(&report)?,
        (Format::Table, _) => render::lookup::lookup_table(&report, l.full, &l.style).into_bytes(),
    };
    match &l.output {
        Some(path) => std::fs::write(path, bytes).map_err(|err| {
            Stop::Error(Error::Write {
                path: path.to_path_buf(),
                err,
            })
        }),
        None => Ok(render::stdout(&bytes)?),
    }
}

/// Opens MODEL of `command MODEL QUERY...`; when it cannot be opened and
/// one of the queries is a path, the error says the two look swapped.
fn open_before_queries(
    command: &str,
    model: &str,
    queries: &[QuerySpec],
    config: &Config,
) -> Result<(Checkpoint, Roles)> {
    open(model, config).map_err(|e| {
        let later: Vec<String> = (queries.iter())
            .filter_map(|q| match q {
                QuerySpec::Expr(e) => Some(e.clone()),
                QuerySpec::Text(_) => None,
            })
            .collect();
        usage::swapped_model(command, model, &later, "QUERY...").map_or(e, Error::BadInput)
    })
}

/// `neighbors`; its exit code is 2 when a line of `--batch` could not be
/// answered (each is said on stderr with its number, and the others are
/// answered), as a tool that skips an unreadable input ends.
fn neighbors(n: &Neighbors, config: &Config) -> std::result::Result<u8, Stop> {
    let (ckpt, roles) = open_before_queries("neighbors", &n.model, &n.request.queries, config)?;
    let mut req = n.request.clone();
    req.batch = match &n.batch {
        None => None,
        Some(BatchSource::Stdin) => Some(Batch::read("standard input", io::stdin().lock())?),
        Some(BatchSource::File(path)) => Some(Batch::read_file(path)?),
    };
    let report = if req.needs_vocab() {
        let vocab = needed_vocab(&ckpt, &config.out)?;
        neighbors::run(&ckpt, &roles, vocab.as_ref(), n.matrix, &req)?
    } else {
        // Ids only: the scan need not wait for the tokenizer, which loads
        // alongside it and names the results afterwards (if it can be read).
        std::thread::scope(|s| -> Result<_> {
            let loading = s.spawn(|| optional_vocab(&ckpt, &config.out));
            let report = neighbors::run(&ckpt, &roles, None, n.matrix, &req);
            let vocab = loading
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
            let mut report = report?;
            if let Some(v) = &vocab {
                report.name_tokens(v);
            }
            Ok(report)
        })?
    };
    let out = &config.out;
    print_notes(out, &report.notes);
    if let (true, Some(kernel)) = (out.verbose, &report.kernel) {
        eprintln!("kernel: {} ({})", kernel.name, kernel.reason);
    }
    if let Some(batch) = &req.batch {
        for e in &report.errors {
            eprintln!(
                "embscope: line {} of {}: {}",
                e.line, batch.source, e.message
            );
        }
    }
    emit(&report, out)?;
    Ok(if report.errors.is_empty() { 0 } else { 2 })
}

fn similarity(s: &Similarity, config: &Config) -> std::result::Result<(), Stop> {
    use crate::render::output::Format;
    // The picture's file is checked before any work.
    let plot = s.plot.as_deref().map(OutputFile::create).transpose()?;
    let (ckpt, roles) = open_before_queries("similarity", &s.model, &s.queries, config)?;
    // Rows by id need no tokenizer, but name their tokens when it reads.
    let vocab = match s.queries.iter().any(QuerySpec::needs_vocab) {
        true => needed_vocab(&ckpt, &config.out)?,
        false => optional_vocab(&ckpt, &config.out)?,
    };
    let report = cmd::similarity::run(&ckpt, &roles, vocab.as_ref(), s.matrix, &s.queries)?;
    let out = &config.out;
    print_notes(out, &report.notes);
    if let Some(file) = plot {
        write_whole(file, render::similarity::similarity_svg(&report).as_bytes())?;
    }
    match s.format {
        Format::Json => render::stdout(&render::json(&report)?)?,
        Format::Csv => render::stdout(&render::similarity::similarity_csv(&report)?)?,
        // `--format` offers no npy for similarity.
        Format::Table | Format::Npy => emit(&report, out)?,
    }
    Ok(())
}

fn rows(r: &Rows, config: &Config) -> std::result::Result<(), Stop> {
    // The output file is checked before any work.
    let file = r.output.as_deref().map(OutputFile::create).transpose()?;
    let (ckpt, roles) = open(&r.model, config)?;
    let loading = Loading::new(&ckpt, false);
    let scored = undertrained::run_loading(&ckpt, &roles, |p| loading.load(p), &r.request)?;
    print_notes(&config.out, &loading.notes());
    print_scoring_notes(&config.out, &scored.notes);
    let report = cmd::rows::run(cmd::rows::Scored {
        model: scored.model,
        embedding: scored.embedding,
        head: scored.head,
        indicators: scored.indicators,
        every_row: scored.every_row,
    });
    match file {
        Some(mut file) => {
            render::rows::write(&report, r.format, file.writer()).map_err(|e| file.error(e))?;
            file.commit()?;
        }
        None => {
            let mut out = io::BufWriter::new(io::stdout().lock());
            render::rows::write(&report, r.format, &mut out)?;
        }
    }
    Ok(())
}

/// Writes `bytes` to `file` and puts it in place.
fn write_whole(mut file: OutputFile, bytes: &[u8]) -> Result<()> {
    file.writer().write_all(bytes).map_err(|e| file.error(e))?;
    file.commit()
}

/// `report`: the page's file is checked before any work; the vocabulary
/// is loaded as `undertrained` needs it (the merges' places kept for the
/// reachability test) and shared by every section. A tokenizer that
/// cannot be read is a note, and the sections do without it.
fn report(
    model: &str,
    output: &Path,
    base: Option<&str>,
    request: &crate::report::Request,
    config: &Config,
) -> std::result::Result<(), Stop> {
    let out = &config.out;
    let file = OutputFile::create(output)?;
    let (ckpt, mut roles) = open(model, config)?;
    roles.compare_head(&ckpt);
    let base = base.map(|b| open(b, config)).transpose()?;
    let base_vocab = match &base {
        Some((b, _)) => optional_vocab(b, out)?,
        None => None,
    };
    let base = base.as_ref().map(|(ckpt, roles)| cmd::diff::Model {
        ckpt,
        roles,
        vocab: base_vocab.as_ref(),
    });
    let loading = Loading::new(&ckpt, true);
    let report = crate::report::run(&ckpt, &roles, || loading.load(&mut |_| {}), base, request)?;
    print_notes(out, &loading.notes());
    let page = render::report::page(&report);
    write_whole(file, page.as_bytes())?;
    if out.json {
        render::stdout(&render::json(&report)?)?;
    } else {
        let text = render::report::written(&report, output, page.len(), &out.style);
        render::stdout(text.as_bytes())?;
    }
    Ok(())
}
