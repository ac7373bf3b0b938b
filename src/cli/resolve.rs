//! The parsed arguments resolved once into plain configuration, as
//! ripgrep turns its low-level arguments into high-level ones: the value
//! enums become the library's own types, flags that depend on each other
//! (`--json`, `--format` and `-o`; `--quiet` and `--verbose`; `--color` and
//! the terminal) are settled, and the request of each command is built.
//! Contradictions and bad values are errors here, before any file is read.

use std::path::PathBuf;

use clap_complete::Shell;

use crate::cmd::check::Severity;
use crate::cmd::diff;
use crate::cmd::lookup::Query;
use crate::cmd::neighbors::{self, Filter, QuerySpec};
use crate::cmd::similarity;
use crate::cmd::size::Scenario;
use crate::cmd::tensors::SortBy;
use crate::cmd::undertrained::{self, ReferenceSpec};
use crate::dtype::Dtype;
use crate::render::Style;
use crate::render::color::ColorChoice;
use crate::render::output::{self, Format};
use crate::render::similarity::MAX_PLOTTED;
use crate::report;
use crate::roles::Which;
use crate::search::Metric;
use crate::{Error, Result};

use super::args::{
    Cli, ColorArg, Command, DiffArgs, FailOn, FilterArg, FormatArg, LookupArgs, MatricesArg,
    MatrixArg, MetricArg, NeighborsArgs, ReportArgs, RowsArgs, RowsFormatArg, SimilarityArgs,
    SimilarityFormatArg, SizeArgs, SortArg, UndertrainedArgs,
};
use crate::usage;

/// The whole command line, resolved.
#[derive(Debug)]
pub struct Config {
    /// How results and diagnostics are shown.
    pub out: Out,
    /// `--revision`: the revision of a Hub id.
    pub revision: Option<String>,
    /// The command, with its request.
    pub task: Task,
}

/// How results and diagnostics are shown, whatever the command.
#[derive(Debug, Clone, Copy)]
pub struct Out {
    /// One JSON document on stdout instead of text.
    pub json: bool,
    /// No notes on stderr, only results and errors.
    pub quiet: bool,
    /// Say on stderr how the work was done (never with `quiet`).
    pub verbose: bool,
    /// Draw progress bars.
    pub progress: bool,
    /// The styling of text on stdout.
    pub style: Style,
}

/// A command and what it is asked.
#[derive(Debug)]
pub enum Task {
    /// `info`.
    Info {
        /// The MODEL argument.
        model: String,
    },
    /// `tensors`.
    Tensors {
        /// The MODEL argument.
        model: String,
        /// Only tensors matching this glob.
        filter: Option<String>,
        /// Row order.
        sort: SortBy,
    },
    /// `size`.
    Size {
        /// The MODEL argument.
        model: String,
        /// The what-if figures.
        scenario: Scenario,
    },
    /// `lookup`.
    Lookup(Lookup),
    /// `neighbors`.
    Neighbors(Neighbors),
    /// `similarity`.
    Similarity(Similarity),
    /// `check`.
    Check {
        /// The MODEL argument.
        model: String,
        /// Exit with 1 from this severity on.
        fail_on: Severity,
        /// The picture's file, when asked for.
        plot: Option<PathBuf>,
        /// `--chat-template`: the template to check instead of the model's.
        chat_template: Option<String>,
        /// `--data`: the training data to count.
        data: Vec<std::path::PathBuf>,
    },
    /// `undertrained`.
    Undertrained {
        /// The MODEL argument.
        model: String,
        /// What the analysis is asked.
        request: undertrained::Request,
        /// The picture's file, when asked for.
        plot: Option<PathBuf>,
    },
    /// `rows`.
    Rows(Rows),
    /// `diff`.
    Diff {
        /// The BASE argument.
        base: String,
        /// The TUNED argument.
        tuned: String,
        /// What the comparison is asked.
        request: diff::Request,
        /// The picture's file, when asked for.
        plot: Option<PathBuf>,
    },
    /// `report`.
    Report {
        /// The MODEL argument.
        model: String,
        /// The page's file.
        output: PathBuf,
        /// The BASE of `--base`.
        base: Option<String>,
        /// What the page is asked.
        request: report::Request,
    },
    /// `completions`.
    Completions(Shell),
    /// `man`.
    Man,
}

/// `lookup`, resolved.
#[derive(Debug)]
pub struct Lookup {
    /// The MODEL argument.
    pub model: String,
    /// The rows asked for.
    pub query: Query,
    /// The matrix read.
    pub matrix: Which,
    /// What is written.
    pub format: Format,
    /// The file written instead of stdout.
    pub output: Option<PathBuf>,
    /// Every value, not the first eight.
    pub full: bool,
    /// The styling of a table: none into a file.
    pub style: Style,
}

/// `neighbors`, resolved.
#[derive(Debug)]
pub struct Neighbors {
    /// The MODEL argument.
    pub model: String,
    /// The queries of the command line and the search's settings; the
    /// queries of `batch` join them once the model is open.
    pub request: neighbors::Request,
    /// Where `--batch` reads its queries, one a line.
    pub batch: Option<BatchSource>,
    /// The matrix searched.
    pub matrix: Which,
}

/// Where `--batch` reads.
#[derive(Debug, PartialEq)]
pub enum BatchSource {
    /// `-`: standard input.
    Stdin,
    /// A file (a named pipe too, as `<(…)` gives).
    File(PathBuf),
}

/// `similarity`, resolved.
#[derive(Debug)]
pub struct Similarity {
    /// The MODEL argument.
    pub model: String,
    /// The queries, words and expressions first, then texts.
    pub queries: Vec<QuerySpec>,
    /// The matrix read.
    pub matrix: Which,
    /// What is printed: a table, JSON or CSV.
    pub format: Format,
    /// The picture's file, when asked for.
    pub plot: Option<PathBuf>,
}

/// `rows`, resolved.
#[derive(Debug)]
pub struct Rows {
    /// The MODEL argument.
    pub model: String,
    /// The scoring's request: both matrices, every row kept, no list.
    pub request: undertrained::Request,
    /// CSV, JSON or npy.
    pub format: Format,
    /// The file written instead of stdout.
    pub output: Option<PathBuf>,
}

/// Resolves the parsed command line.
pub fn resolve(cli: Cli) -> Result<Config> {
    let g = cli.global;
    let out = Out {
        json: g.json,
        quiet: g.quiet,
        verbose: g.verbose && !g.quiet,
        progress: !g.quiet && !g.no_progress,
        style: Style::detect(g.color.into()),
    };
    let task = match cli.command {
        Command::Info { model } => Task::Info { model },
        Command::Tensors {
            model,
            filter,
            sort,
        } => Task::Tensors {
            model,
            filter,
            sort: sort.into(),
        },
        Command::Size(args) => size(args)?,
        Command::Lookup(args) => Task::Lookup(lookup(args, &out)?),
        Command::Neighbors(args) => Task::Neighbors(neighbors(args, &out)),
        Command::Similarity(args) => Task::Similarity(similarity(args, &out)?),
        Command::Check(args) => Task::Check {
            model: args.model,
            fail_on: match args.fail_on {
                FailOn::Error => Severity::Error,
                FailOn::Warn => Severity::Warn,
            },
            plot: svg_file(args.plot)?,
            chat_template: args.chat_template,
            data: args.data,
        },
        Command::Undertrained(args) => undertrained(args, &out)?,
        Command::Rows(args) => Task::Rows(rows(args, &out)?),
        Command::Diff(args) => diff(args, &out)?,
        Command::Report(args) => report(args, &out)?,
        Command::Completions { shell } => Task::Completions(shell),
        Command::Man => Task::Man,
    };
    Ok(Config {
        out,
        revision: g.revision,
        task,
    })
}

fn size(args: SizeArgs) -> Result<Task> {
    let dtype = args
        .dtype
        .as_deref()
        .map(|d| {
            Dtype::parse(d).filter(|d| d.is_float()).ok_or_else(|| {
                Error::BadInput(format!(
                    "--dtype `{d}` is not a floating-point dtype (expected bf16, f16, f32, f64, f8_e4m3, f8_e5m2, or a GGUF type: q8_0, q4_k, q6_k ...)"
                ))
            })
        })
        .transpose()?;
    // clap refuses --tie with --untie.
    let tied = match (args.tie, args.untie) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    Ok(Task::Size {
        model: args.model,
        scenario: Scenario {
            vocab: args.vocab,
            hidden: args.hidden,
            dtype,
            tied,
        },
    })
}

fn lookup(args: LookupArgs, out: &Out) -> Result<Lookup> {
    let format = output::lookup_format(
        out.json,
        args.format.map(Into::into),
        args.output.as_deref(),
    )?;
    let query = if let Some(text) = args.text {
        Query::Text {
            text,
            add_special_tokens: args.add_special_tokens,
        }
    } else if !args.token.is_empty() {
        Query::Tokens(args.token)
    } else {
        Query::Ids(args.id.into_iter().flat_map(|list| list.0).collect())
    };
    Ok(Lookup {
        model: args.model,
        query,
        matrix: args.matrix.into(),
        format,
        style: if args.output.is_some() {
            Style::plain()
        } else {
            out.style
        },
        output: args.output,
        full: args.full,
    })
}

fn neighbors(args: NeighborsArgs, out: &Out) -> Neighbors {
    let mut queries: Vec<QuerySpec> = args.queries.into_iter().map(QuerySpec::Expr).collect();
    queries.extend(args.text.into_iter().map(QuerySpec::Text));
    Neighbors {
        model: args.model,
        request: neighbors::Request {
            queries,
            k: args.k,
            metric: args.metric.into(),
            include_query: args.include_query,
            filters: args.filter.into_iter().map(Into::into).collect(),
            progress: out.progress,
            batch: None,
        },
        batch: args.batch.map(|path| match path.to_str() {
            Some("-") => BatchSource::Stdin,
            _ => BatchSource::File(path),
        }),
        matrix: args.matrix.into(),
    }
}

fn similarity(args: SimilarityArgs, out: &Out) -> Result<Similarity> {
    let format = args.format.map(|f| match f {
        SimilarityFormatArg::Table => Format::Table,
        SimilarityFormatArg::Json => Format::Json,
        SimilarityFormatArg::Csv => Format::Csv,
    });
    let format = output::lookup_format(out.json, format, None)?;
    let plot = svg_file(args.plot)?;
    let mut queries: Vec<QuerySpec> = args.queries.into_iter().map(QuerySpec::Expr).collect();
    queries.extend(args.text.into_iter().map(QuerySpec::Text));
    similarity::check_count(queries.len())?;
    if plot.is_some() && queries.len() > MAX_PLOTTED {
        return Err(Error::BadInput(format!(
            "--plot draws at most {MAX_PLOTTED} queries ({} given): leave --plot out for the cosines of more",
            queries.len()
        )));
    }
    Ok(Similarity {
        model: args.model,
        queries,
        matrix: args.matrix.into(),
        format,
        plot,
    })
}

/// `--plot`: a file name ending in `.svg`, the only picture made.
fn svg_file(plot: Option<PathBuf>) -> Result<Option<PathBuf>> {
    if let Some(p) = &plot
        && !p.extension().is_some_and(|e| e.eq_ignore_ascii_case("svg"))
    {
        return Err(Error::BadInput(format!(
            "--plot `{}`: the picture is SVG; give a file name ending in .svg",
            p.display()
        )));
    }
    Ok(plot)
}

/// `report -o`: a file name ending in `.html` or `.htm`.
fn report(args: ReportArgs, out: &Out) -> Result<Task> {
    let page = &args.output;
    if !page
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("html") || e.eq_ignore_ascii_case("htm"))
    {
        return Err(Error::BadInput(format!(
            "-o `{}`: the report is an HTML page; give a file name ending in .html",
            page.display()
        )));
    }
    Ok(Task::Report {
        model: args.model,
        output: args.output,
        base: args.base,
        request: report::Request {
            progress: out.progress,
        },
    })
}

/// `--reference`: `auto`, or ids and ranges.
fn reference(arg: &str) -> Result<ReferenceSpec> {
    if arg.trim() == "auto" {
        return Ok(ReferenceSpec::Auto);
    }
    let ids = usage::id_list(arg).map_err(|what| {
        Error::BadInput(format!(
            "--reference: {what}; expected `auto` or ids and ranges such as `100-200,5`"
        ))
    })?;
    Ok(ReferenceSpec::Ids(ids.0))
}

fn rows(args: RowsArgs, out: &Out) -> Result<Rows> {
    let format = args.format.map(|f| match f {
        RowsFormatArg::Csv => Format::Csv,
        RowsFormatArg::Json => Format::Json,
        RowsFormatArg::Npy => Format::Npy,
    });
    // No flag and no extension that names a format: CSV.
    let format = match output::lookup_format(out.json, format, args.output.as_deref())? {
        Format::Table => Format::Csv,
        f => f,
    };
    Ok(Rows {
        model: args.model,
        request: undertrained::Request {
            top: 0,
            matrix: None,
            reference: reference(&args.reference)?,
            reachability: false,
            include_reference: true,
            progress: out.progress,
        },
        format,
        output: args.output,
    })
}

fn undertrained(args: UndertrainedArgs, out: &Out) -> Result<Task> {
    let reference = reference(&args.reference)?;
    Ok(Task::Undertrained {
        model: args.model,
        request: undertrained::Request {
            top: args.top,
            matrix: args.matrix.map(Into::into),
            reference,
            reachability: !args.no_reachable,
            include_reference: args.include_reference,
            progress: out.progress,
        },
        plot: svg_file(args.plot)?,
    })
}

fn diff(args: DiffArgs, out: &Out) -> Result<Task> {
    Ok(Task::Diff {
        base: args.base,
        tuned: args.tuned,
        request: diff::Request {
            matrix: match args.matrix {
                MatricesArg::Embed => Some(Which::Embed),
                MatricesArg::Head => Some(Which::Head),
                MatricesArg::Both => None,
            },
            top: args.top,
            by_id: args.by_id,
            progress: out.progress,
        },
        plot: svg_file(args.plot)?,
    })
}

impl From<ColorArg> for ColorChoice {
    fn from(c: ColorArg) -> Self {
        match c {
            ColorArg::Auto => ColorChoice::Auto,
            ColorArg::Always => ColorChoice::Always,
            ColorArg::Never => ColorChoice::Never,
        }
    }
}

impl From<SortArg> for SortBy {
    fn from(s: SortArg) -> Self {
        match s {
            SortArg::Name => SortBy::Name,
            SortArg::Size => SortBy::Size,
        }
    }
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Table => Format::Table,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => Format::Csv,
            FormatArg::Npy => Format::Npy,
        }
    }
}

impl From<MatrixArg> for Which {
    fn from(m: MatrixArg) -> Self {
        match m {
            MatrixArg::Embed => Which::Embed,
            MatrixArg::Head => Which::Head,
        }
    }
}

impl From<FilterArg> for Filter {
    fn from(f: FilterArg) -> Self {
        match f {
            FilterArg::NoSpecial => Filter::NoSpecial,
            FilterArg::NoPadding => Filter::NoPadding,
            FilterArg::Letters => Filter::Letters,
        }
    }
}

impl From<MetricArg> for Metric {
    fn from(m: MetricArg) -> Self {
        match m {
            MetricArg::Cosine => Metric::Cosine,
            MetricArg::Dot => Metric::Dot,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::{Parser, ValueEnum};

    use super::*;

    fn task(args: &[&str]) -> Task {
        let mut line = vec!["embscope"];
        line.extend(args);
        resolve(Cli::try_parse_from(line).expect("parses"))
            .expect("resolves")
            .task
    }

    #[test]
    fn format_names_are_the_flag_values() {
        // Errors name a format as `--format` spells it.
        for f in FormatArg::value_variants() {
            let name = f.to_possible_value().expect("a value");
            assert_eq!(Format::from(*f).name(), name.get_name());
        }
    }

    #[test]
    fn id_lists_join_in_order() {
        let Task::Lookup(l) = task(&["lookup", "m", "--id", "3", "0-2,9", "7 8"]) else {
            panic!("not lookup");
        };
        let Query::Ids(ranges) = l.query else {
            panic!("not ids");
        };
        assert_eq!(ranges, [(3, 3), (0, 2), (9, 9), (7, 7), (8, 8)]);
        let Task::Undertrained { request, .. } =
            task(&["undertrained", "m", "--reference", "0-2, 9"])
        else {
            panic!("not undertrained");
        };
        assert_eq!(request.reference, ReferenceSpec::Ids(vec![(0, 2), (9, 9)]));
    }

    #[test]
    fn what_if_flags() {
        let Task::Size { scenario, .. } = task(&["size", "m", "--untie", "--dtype", "F16"]) else {
            panic!("not size");
        };
        assert_eq!(
            scenario,
            Scenario {
                dtype: Some(Dtype::F16),
                tied: Some(false),
                ..Scenario::default()
            }
        );
        let Task::Size { scenario, .. } = task(&["size", "m"]) else {
            panic!("not size");
        };
        assert!(!scenario.is_asked());
    }
}
