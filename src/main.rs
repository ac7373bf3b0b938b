//! The `embscope` binary: parse the command line, run the command, print
//! the report, map the outcome to an exit code (0 ok, 1 `check` findings at
//! or above `--fail-on`, 2 bad usage or bad input; a broken pipe is 0).

use std::io;
use std::process::ExitCode;

use clap::Parser;

use embscope::checkpoint::locate::locate;
use embscope::checkpoint::{Checkpoint, WeightFormat};
use embscope::cli::{CheckArgs, Cli, Command, Format, LookupArgs, MetricArg, NeighborsArgs};
use embscope::cmd;
use embscope::progress::Progress;
use embscope::render::{self, Style};
use embscope::roles::Roles;
use embscope::usage;
use embscope::vocab::Vocab;

/// Why a run stopped early.
enum Stop {
    /// Bad usage or bad input: printed, exit code 2.
    Error(embscope::Error),
    /// Writing stdout failed (a closed pipe ends quietly).
    Output(io::Error),
}

impl From<embscope::Error> for Stop {
    fn from(e: embscope::Error) -> Self {
        Stop::Error(e)
    }
}

impl From<io::Error> for Stop {
    fn from(e: io::Error) -> Self {
        Stop::Output(e)
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => match usage::one_line(&e, &cli_args()) {
            Some(line) => {
                eprintln!("embscope: {line}");
                return ExitCode::from(2);
            }
            // Help and version: clap prints them and knows the exit code.
            None => {
                let _ = e.print();
                return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
            }
        },
    };
    match run(&cli) {
        Ok(code) => ExitCode::from(code),
        Err(Stop::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Stop::Output(e)) => {
            eprintln!("embscope: cannot write output: {e}");
            ExitCode::from(2)
        }
        Err(Stop::Error(e)) => {
            eprintln!("embscope: {e}");
            ExitCode::from(2)
        }
    }
}

/// The command line after the program name, lossily as text.
fn cli_args() -> Vec<String> {
    std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

fn open(model: &str, cli: &Cli) -> Result<(Checkpoint, Roles), Stop> {
    let ckpt = open_checkpoint(model, cli)?;
    let roles = Roles::resolve(&ckpt);
    Ok((ckpt, roles))
}

/// Opens MODEL at `--revision` (`main` by default), first printing on
/// stderr the notes on how it was located, and noting when a revision was
/// given for a path, where it means nothing.
fn open_checkpoint(model: &str, cli: &Cli) -> Result<Checkpoint, Stop> {
    let revision = cli.global.revision.as_deref();
    if revision.is_some() && std::path::Path::new(model).exists() {
        print_notes(
            cli,
            &[format!(
                "--revision applies to Hub ids only; ignored for {model}"
            )],
        );
    }
    let sources = locate(model, revision.unwrap_or("main"))?;
    print_notes(cli, &sources.notes);
    let shown = sources.notes.len();
    let ckpt = Checkpoint::open_located(model, sources)?;
    // Notes made while opening (a split opened as its whole model).
    print_notes(cli, &ckpt.sources.notes[shown..]);
    Ok(ckpt)
}

/// Prints `notes` on stderr, one `note: …` line each, unless `--quiet`.
fn print_notes(cli: &Cli, notes: &[String]) {
    if !cli.global.quiet {
        for note in notes {
            eprintln!("note: {note}");
        }
    }
}

fn load_vocab(ckpt: &Checkpoint) -> Result<Option<Vocab>, Stop> {
    load_vocab_with(ckpt, Vocab::load)
}

/// The vocabulary, loaded from tokenizer.json by `load` ([`Vocab::load`],
/// or [`Vocab::load_previewing`] for `undertrained`), or from a GGUF
/// file's metadata.
fn load_vocab_with(
    ckpt: &Checkpoint,
    load: impl FnOnce(&std::path::Path, Option<&serde_json::Value>) -> embscope::Result<Option<Vocab>>,
) -> Result<Option<Vocab>, Stop> {
    if let (WeightFormat::Gguf, Some(metadata)) = (ckpt.format, ckpt.gguf_metadata()) {
        // A GGUF file carries its vocabulary in its metadata.
        return Ok(Vocab::from_gguf(&ckpt.shards[0].path, metadata)?);
    }
    Ok(load(
        &ckpt.sources.dir,
        ckpt.config.as_ref().map(|c| &c.raw),
    )?)
}

fn lookup(cli: &Cli, args: &LookupArgs) -> Result<(), Stop> {
    use embscope::cmd::lookup::Query;
    // Contradicting output flags are a usage error before any file is read.
    let out = args.output.as_deref();
    let format = render::output::lookup_format(cli.global.json, args.format, out)?;
    let (ckpt, roles) = open(&args.model, cli)?;
    let query = if let Some(text) = &args.text {
        Query::Text {
            text: text.clone(),
            add_special_tokens: args.add_special_tokens,
        }
    } else if !args.token.is_empty() {
        Query::Tokens(args.token.clone())
    } else {
        Query::Ids(args.id.clone())
    };
    // Rows by id into a .npy file carry no token strings: no tokenizer needed.
    let vocab = match (&query, format) {
        (Query::Ids(_), Format::Npy) => None,
        _ => load_vocab(&ckpt)?,
    };
    let report = cmd::lookup::run(&ckpt, &roles, vocab.as_ref(), args.matrix, &query)?;
    let bytes = match format {
        Format::Npy => {
            let Some(path) = out else {
                unreachable!("lookup_format refuses npy without -o");
            };
            render::lookup::lookup_npy(&report, path)?;
            return Ok(());
        }
        Format::Json => render::json(&report)?,
        Format::Csv => render::lookup::lookup_csv(&report)?,
        Format::Table => {
            let style = if out.is_some() {
                Style::plain()
            } else {
                Style::detect(cli.global.color)
            };
            render::lookup::lookup_table(&report, args.full, &style).into_bytes()
        }
    };
    match out {
        Some(path) => std::fs::write(path, bytes).map_err(|err| {
            Stop::Error(embscope::Error::Write {
                path: path.to_path_buf(),
                err,
            })
        }),
        None => render::stdout(&bytes).map_err(Stop::Output),
    }
}

fn neighbors(cli: &Cli, args: &NeighborsArgs) -> Result<(), Stop> {
    use embscope::cmd::neighbors::{self, QuerySpec, Request};
    use embscope::search::Metric;
    let (ckpt, roles) = open(&args.model, cli).map_err(|e| match e {
        Stop::Error(e) => Stop::Error(
            usage::swapped_model("neighbors", &args.model, &args.queries, "QUERY...")
                .map_or(e, embscope::Error::BadInput),
        ),
        other => other,
    })?;
    let mut queries: Vec<QuerySpec> = args.queries.iter().cloned().map(QuerySpec::Expr).collect();
    queries.extend(args.text.iter().cloned().map(QuerySpec::Text));
    if let Some(path) = &args.batch {
        queries.extend(neighbors::read_batch(path)?);
    }
    let req = Request {
        queries,
        k: args.k,
        metric: match args.metric {
            MetricArg::Cosine => Metric::Cosine,
            MetricArg::Dot => Metric::Dot,
        },
        include_query: args.include_query,
        filters: args.filter.clone(),
        progress: !cli.global.quiet && !cli.global.no_progress,
    };
    let which = args.matrix;
    let report = if req.needs_vocab() {
        let vocab = load_vocab(&ckpt)?;
        neighbors::run(&ckpt, &roles, vocab.as_ref(), which, &req)?
    } else {
        // Ids only: the scan need not wait for the tokenizer, which loads
        // alongside it and names the results afterwards.
        std::thread::scope(|s| -> Result<_, Stop> {
            let loading = s.spawn(|| load_vocab(&ckpt));
            let report = neighbors::run(&ckpt, &roles, None, which, &req);
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
    print_notes(cli, &report.notes);
    if cli.global.verbose && !cli.global.quiet {
        let kernel = &report.kernel;
        eprintln!("kernel: {} ({})", kernel.name, kernel.reason);
    }
    render::emit(&report, cli.global.json, &Style::detect(cli.global.color))?;
    Ok(())
}

/// `check`: exit code 1 when a finding reaches `--fail-on`.
fn check(cli: &Cli, args: &CheckArgs) -> Result<u8, Stop> {
    use embscope::cli::FailOn;
    use embscope::cmd::check::{Check, Severity, ValuePass};
    let (json, style) = (cli.global.json, Style::detect(cli.global.color));
    let (ckpt, mut roles) = open(&args.model, cli)?;
    roles.compare_head(&ckpt);
    let pass = ValuePass::new(&ckpt, &roles);
    let enabled = !cli.global.quiet && !cli.global.no_progress;
    let progress = Progress::new(enabled, pass.rows(), &pass.label());
    // The value pass streams the matrices while one worker of the pool
    // reads the tokenizer and small files and prints what they show (if
    // that fails, the pass is cancelled rather than waited for), then
    // joins the pass. The worker that starts the pass leaves the load to
    // the next one free: read on a thread of its own, the load shared the
    // cores with every worker, and `check` of the Llama-3-shaped
    // checkpoint took 5 ms longer on 2 cores (see the README).
    let held = std::sync::OnceLock::new();
    let (values, started) = rayon::join(
        || pass.run(&progress),
        || -> Result<_, Stop> {
            let loaded = load_vocab(&ckpt).inspect_err(|_| progress.cancel())?;
            // Kept outside the task: the check borrows it.
            let vocab = held.get_or_init(|| loaded).as_ref();
            pass.set_vocab(vocab);
            let check = Check::start(&ckpt, &roles, vocab).inspect_err(|_| progress.cancel())?;
            if !json {
                let early = render::check::early(check.early(), &style);
                progress
                    .suspend(|| render::stdout(early.as_bytes()))
                    .inspect_err(|_| progress.cancel())?;
            }
            Ok(check)
        },
    );
    let check = started?;
    let report = check.finish(values);
    render::emit(&report, json, &style)?;
    // The matrices' mapped pages are let go on all cores once the report
    // is out, instead of by one thread at exit. (Let go while the findings
    // were made, they slowed them more than the release took: on 2 cores,
    // the findings' page faults waited on it.)
    pass.release();
    let threshold = match args.fail_on {
        FailOn::Error => Severity::Error,
        FailOn::Warn => Severity::Warn,
    };
    Ok(u8::from(report.worst().is_some_and(|w| w >= threshold)))
}

fn undertrained(cli: &Cli, args: &embscope::cli::UndertrainedArgs) -> Result<(), Stop> {
    use embscope::cmd::undertrained::{self, ReferenceSpec, Request};
    use embscope::vocab::Preview;
    let req = Request {
        top: args.top,
        matrix: args.matrix,
        reference: ReferenceSpec::parse(&args.reference)?,
        reachability: !args.no_reachable,
        progress: !cli.global.quiet && !cli.global.no_progress,
    };
    let (ckpt, roles) = open(&args.model, cli)?;
    // The tokenizer loads while the first reads of the matrices run,
    // keeping its merges' places for the reachability test, and showing
    // its vocab as soon as it is read.
    let keep_merges = req.tests_reachability();
    let load = |preview: &mut dyn FnMut(&Preview)| {
        load_vocab_with(&ckpt, |dir, config| {
            Vocab::load_previewing(dir, config, keep_merges, preview)
        })
    };
    let report = undertrained::run_loading(&ckpt, &roles, load, &req)?;
    print_notes(cli, &report.notes);
    if cli.global.verbose && !cli.global.quiet {
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
    render::emit(&report, cli.global.json, &Style::detect(cli.global.color))?;
    Ok(())
}

fn run(cli: &Cli) -> Result<u8, Stop> {
    let style = Style::detect(cli.global.color);
    let json = cli.global.json;
    match &cli.command {
        Command::Info { model } => {
            let (ckpt, mut roles) = open(model, cli)?;
            roles.compare_head(&ckpt);
            let vocab = load_vocab(&ckpt)?;
            render::emit(&cmd::info::run(&ckpt, &roles, vocab.as_ref()), json, &style)?;
        }
        Command::Tensors {
            model,
            filter,
            sort,
        } => {
            let ckpt = open_checkpoint(model, cli)?;
            let report = cmd::tensors::run(&ckpt, filter.as_deref(), *sort)?;
            render::emit(&report, json, &style)?;
            // Like grep: a filter that matches nothing exits 1.
            if let (Some(glob), 0) = (filter, report.count) {
                if !cli.global.quiet {
                    eprintln!(
                        "embscope: no tensor matches \"{glob}\" ({})",
                        render::plural(report.total, "tensor")
                    );
                }
                return Ok(1);
            }
        }
        Command::Size(args) => {
            let (ckpt, roles) = open(&args.model, cli)?;
            render::emit(&cmd::size::run(&ckpt, &roles, args)?, json, &style)?;
        }
        Command::Lookup(args) => lookup(cli, args)?,
        Command::Neighbors(args) => neighbors(cli, args)?,
        Command::Check(args) => return check(cli, args),
        Command::Undertrained(args) => undertrained(cli, args)?,
        Command::Completions { shell } => render::stdout(&usage::completions(*shell))?,
        Command::Man => render::stdout(&usage::man_page()?)?,
    }
    Ok(0)
}
