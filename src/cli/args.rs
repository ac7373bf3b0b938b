//! The command line as clap derive types, and no logic: each field's doc
//! comment is its `--help` text. The value enums here mirror the plain
//! types of the library that `resolve` maps them onto.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use clap_complete::Shell;

use crate::cmd::{diff, undertrained};
use crate::usage::{self, IdList};

/// Inspect the vocabulary layers (input embedding and LM head) of a
/// language-model checkpoint, straight from its safetensors or GGUF files.
///
/// MODEL is a Hugging Face model directory, a .safetensors file, an
/// *.safetensors.index.json, a .gguf file, a Hub id (org/name) already in
/// the local Hugging Face cache, or an Ollama name (llama3.2:1b) already
/// pulled. Nothing is ever downloaded; files are opened read-only.
#[derive(Debug, Parser)]
#[command(name = "embscope", version, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// Options every command takes.
    #[command(flatten)]
    pub global: Global,
}

/// Options every command takes, listed under their own help heading.
#[derive(Debug, Args)]
pub struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Print no notes or progress on stderr, only results and errors.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    /// Never draw a progress bar.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_progress: bool,
    /// Say on stderr how the work was done (`neighbors`: which search
    /// kernel ran, and why; `undertrained`: when each stage ran, and how
    /// long it took).
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub verbose: bool,
    /// When to colour text output; `auto` colours a terminal unless
    /// NO_COLOR is set or CLICOLOR=0, and CLICOLOR_FORCE=1 colours a pipe.
    #[arg(long, global = true, help_heading = GLOBAL, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Revision of a Hub id in the local cache (branch, tag or commit);
    /// `main` when not given. Ignored, with a note, for a path.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "REV")]
    pub revision: Option<String>,
}

/// The help heading of [`Global`] options.
const GLOBAL: &str = "Global options";

/// `--color`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ColorArg {
    /// Colour a terminal, as the environment allows.
    Auto,
    /// Always colour, even into a pipe or file.
    Always,
    /// Never colour.
    Never,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Files, config, the embedding and head tensors, tie status, tokenizer.
    Info {
        /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
        model: String,
    },
    /// One row per tensor: name, dtype, shape, parameters, bytes, file.
    Tensors {
        /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
        model: String,
        /// Only tensors whose name matches this glob (`*` crosses dots), e.g. `*embed*`.
        #[arg(long, value_name = "GLOB")]
        filter: Option<String>,
        /// Row order.
        #[arg(long, value_enum, default_value_t = SortArg::Name)]
        sort: SortArg,
    },
    /// Parameters and bytes by dtype, the vocabulary layers' share, what
    /// tying saves, and what-if figures (header only).
    Size(SizeArgs),
    /// The stored rows of tokens: by id, by vocabulary entry, or by
    /// tokenizing a text; with id, token, L2 norm and values.
    Lookup(LookupArgs),
    /// The nearest tokens (cosine or dot) to tokens, ids, expressions such
    /// as "king - man + woman", or texts; many queries in one pass.
    Neighbors(NeighborsArgs),
    /// The cosine between every pair of queries (tokens, #IDs, expressions,
    /// texts), as a table, CSV or JSON; with --plot, a picture of them:
    /// a heatmap with similar queries next to each other (average-linkage
    /// clustering on 1 - cosine) beside their map in two principal
    /// components. Reads the asked rows only.
    Similarity(SimilarityArgs),
    /// Consistency audit: sizes, special tokens, tie, dtypes, tokenizer,
    /// and NaN/zero/duplicate/outlier rows; exit code 1 when a finding is
    /// at or above --fail-on.
    Check(CheckArgs),
    /// Rank the tokens whose rows look untrained (glitch tokens), from the
    /// embedding and the head alone.
    ///
    /// Indicators per row: on the head (the embedding when tied), the cosine
    /// to the mean of the reference rows after removing the matrix's first
    /// principal component (found by power iteration over 4,096 evenly
    /// spaced rows, then one streaming pass scores every row); on the
    /// embedding, the L2 norm and the distance to the reference mean. The
    /// reference rows are known-untrained ones: reserved placeholders
    /// (`[unused3]`, `<unused3>`, `<|reserved_special_token_3|>`) and rows
    /// without a token, or the ids given with --reference.
    ///
    /// Combined rank: each indicator becomes a robust z-score (distance from
    /// the median of all rows in units of 1.4826 x the median absolute
    /// deviation; norms and distances on a log scale), signed so that
    /// positive looks untrained; the score is the mean of the head cosine's
    /// and the embedding distance's z-scores (of the norms' without reference
    /// rows). A row scoring 5 or more is a strong candidate.
    Undertrained(UndertrainedArgs),
    /// Every row's figures, for a notebook: id, token, kind, the L2 norms
    /// of the embedding and head rows, and the under-trained indicators,
    /// score and flags of `undertrained` (one streaming pass per matrix).
    ///
    /// CSV, JSON, or a numpy .npy file holding one structured array (a
    /// record per row, a field per column): `np.load(f)["score"]`, or
    /// `pd.DataFrame(np.load(f))`. Missing figures are empty in CSV, null
    /// in JSON and NaN in .npy; `head_norm` is missing when the head is the
    /// embedding (tied).
    Rows(RowsArgs),
    /// What a fine-tune changed in the vocabulary layers: tokens added,
    /// removed and renumbered, rows identical, changed, added (with how
    /// each was initialised) and removed; exit code 1 when anything
    /// differs.
    ///
    /// Rows pair up by token text when both models have a tokenizer, else
    /// by id. A pair is identical when its values are equal after
    /// conversion to f32 (a BF16 row saved as F32 is identical), or within
    /// the rounding of a quantized or narrower dtype. Each added row gets
    /// a verdict against the base rows: zeros, copy (equal to a base row),
    /// mean (within 1% of their median norm from their mean), random (no
    /// more aligned with their mean than an isotropic vector: |cos| below
    /// 4/sqrt(hidden size)), or trained.
    Diff(DiffArgs),
    /// One self-contained HTML page of the vocabulary layers, to look at
    /// and share: the summary (files, config, shapes, tie, the layers'
    /// share of the model and what tying or another vocabulary size would
    /// change), `check`'s findings and row norms, the under-trained scores
    /// and top candidates, with --base what the fine-tune changed, and a
    /// map of the embedding's rows on two principal components. Each section holds the JSON of the command it
    /// shows. Opens offline, fetches nothing, prints a section a page.
    /// Exit code 0 whenever the page is written, whatever it shows.
    Report(ReportArgs),
    /// Print a shell completion script on stdout, e.g.
    /// `embscope completions bash > ~/.local/share/bash-completion/completions/embscope`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
    /// Print the man page (roff) on stdout, e.g. `embscope man > embscope.1`.
    Man,
}

/// Arguments of `undertrained`.
#[derive(Debug, Args)]
pub struct UndertrainedArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Candidates to list.
    #[arg(long, default_value_t = undertrained::DEFAULT_TOP, value_name = "N")]
    pub top: usize,
    /// Score one matrix only (default: the embedding, and the head when the
    /// model has one).
    #[arg(long, value_enum)]
    pub matrix: Option<MatrixArg>,
    /// Known-untrained rows: `auto` (reserved placeholders and rows without
    /// a token; without either, groups of byte-identical rows), or ids and
    /// inclusive ranges such as `100-200,5`.
    #[arg(long, default_value = "auto", value_name = "IDS|auto")]
    pub reference: String,
    /// List the reference rows too, after the candidates (which are the
    /// rows outside the reference set).
    #[arg(long)]
    pub include_reference: bool,
    /// Skip testing whether some text reaches each listed token (encodes,
    /// as the tokenizer runs, to a sequence holding it). For BPE and
    /// SentencePiece vocabularies (tokenizer.json, GGUF) the test builds a
    /// tokenizer cut down to what encoding the tokens' witness texts needs;
    /// for others, the full one.
    #[arg(long)]
    pub no_reachable: bool,
    /// Also draw the scores into FILE.svg: their histogram with the strong
    /// threshold, beside the top candidates by name.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Arguments of `report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// The page to write (checked before any work).
    #[arg(short, long, value_name = "FILE.html", required = true)]
    pub output: PathBuf,
    /// The model MODEL was fine-tuned from: the page adds `diff BASE
    /// MODEL` (the changed rows' cosine, the added rows' init, the rows
    /// that moved most).
    #[arg(long, value_name = "BASE")]
    pub base: Option<String>,
}

/// Arguments of `rows`.
#[derive(Debug, Args)]
pub struct RowsArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Output format [default: from the -o extension (.csv, .json, .npy),
    /// else csv]; `npy` needs -o.
    #[arg(long, value_enum)]
    pub format: Option<RowsFormatArg>,
    /// Known-untrained rows, as `undertrained --reference` takes them:
    /// `auto`, or ids and inclusive ranges such as `100-200,5`.
    #[arg(long, default_value = "auto", value_name = "IDS|auto")]
    pub reference: String,
}

/// Output format of `rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RowsFormatArg {
    /// Comma-separated, a header line naming the columns.
    Csv,
    /// One JSON document (same as --json).
    Json,
    /// numpy .npy: one structured array, a record per row.
    Npy,
}

/// Arguments of `diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The model fine-tuned: directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub base: String,
    /// The fine-tune of it, in any of the same forms.
    pub tuned: String,
    /// The matrices to compare.
    #[arg(long, value_enum, default_value_t = MatricesArg::Both)]
    pub matrix: MatricesArg,
    /// Changed rows to list, those that moved most.
    #[arg(long, default_value_t = diff::DEFAULT_TOP, value_name = "N")]
    pub top: usize,
    /// Pair rows by id, even where both models have a tokenizer.
    #[arg(long)]
    pub by_id: bool,
    /// Also draw the moved rows into FILE.svg: per matrix, the changed
    /// rows' cosine and relative change as histograms, the rows that moved
    /// most by name and the added rows by verdict.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// `diff --matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MatricesArg {
    /// The input embedding.
    Embed,
    /// The output head (the embedding itself on a tied model).
    Head,
    /// Both.
    Both,
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Exit with code 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Also draw the row norms into FILE.svg: a histogram per matrix (log
    /// counts), the special, reserved, padding and untrained-looking rows
    /// outlined.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Check this chat template against the model's rows instead of the
    /// model's own: a .jinja file, a tokenizer_config.json or
    /// chat_template.json, or another MODEL (the instruct model's).
    #[arg(long, value_name = "FILE|MODEL")]
    pub chat_template: Option<String>,
    /// Count the tokens of this training data (plain text, or JSONL with
    /// `text` or `messages` lines, rendered through the chat template) and
    /// name those whose rows look untrained. Repeatable.
    #[arg(long, value_name = "FILE")]
    pub data: Vec<std::path::PathBuf>,
}

/// The severity at which `check` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Errors only.
    Error,
    /// Warnings and errors.
    Warn,
}

/// Row order of `tensors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    /// By name, ascending.
    Name,
    /// By bytes, largest first.
    Size,
}

/// Arguments of `size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// What if the vocabulary had N rows.
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = usage::at_least_one::<u64>)]
    pub vocab: Option<u64>,
    /// What if the hidden size were N (changes the vocabulary layers only).
    #[arg(long, value_name = "N", allow_negative_numbers = true, value_parser = usage::at_least_one::<u64>)]
    pub hidden: Option<u64>,
    /// What if every floating-point tensor were stored as D (bf16, f16, f32, f8_e4m3 ...).
    #[arg(long, value_name = "D")]
    pub dtype: Option<String>,
    /// What if the head were tied to the embedding.
    #[arg(long, conflicts_with = "untie")]
    pub tie: bool,
    /// What if the head were stored separately.
    #[arg(long)]
    pub untie: bool,
}

/// Arguments of `lookup`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("query").required(true).args(["id", "token", "text"])))]
pub struct LookupArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Row ids and inclusive ranges, e.g. `--id 0 42 9906` or `--id 0-5,42`.
    #[arg(long, num_args = 1.., value_name = "N", allow_negative_numbers = true, value_parser = usage::id_list)]
    pub id: Vec<IdList>,
    /// Exact vocabulary entries, as printed (` king`, `\n`, `\"`) or as
    /// stored (`Ġking` for byte-level BPE).
    #[arg(long, num_args = 1.., value_name = "STR")]
    pub token: Vec<String>,
    /// A text to tokenize: one row per token.
    #[arg(long, value_name = "STR")]
    pub text: Option<String>,
    /// With --text, add the special tokens the tokenizer adds (BOS, CLS ...).
    #[arg(long, requires = "text")]
    pub add_special_tokens: bool,
    /// Print every value, not the first eight.
    #[arg(long)]
    pub full: bool,
    /// Output format [default: from the -o extension (.json, .csv, .npy),
    /// else table]; `npy` writes a [n, d] float32 array and needs -o.
    #[arg(long, value_enum)]
    pub format: Option<FormatArg>,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The matrix to read; `head` of a tied model is the embedding.
    #[arg(long, value_enum, default_value_t = MatrixArg::Embed)]
    pub matrix: MatrixArg,
}

/// Output format of `lookup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Aligned text.
    Table,
    /// One JSON document (same as --json).
    Json,
    /// Comma-separated: id, token, norm, v0 ... v{d-1}.
    Csv,
    /// numpy .npy, float32 [n, d].
    Npy,
}

/// Arguments of `neighbors`.
#[derive(Debug, Args)]
pub struct NeighborsArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Queries: a word, `#ID`, or terms joined by ` + ` and ` - `
    /// (`"king - man + woman"`). A word `king` means the word in running
    /// text: the leading-space entry (`Ġking`, `▁king`) when the vocabulary
    /// has one, else the exact entry; a note names the other. `' king'`
    /// (leading space) takes only the leading-space entry, `=king` exactly
    /// the entry after `=` (as printed or stored: `=Ġking`, `=##ing`, `=#`).
    #[arg(value_name = "QUERY")]
    pub queries: Vec<String>,
    /// A text whose token rows are averaged into one query (repeatable).
    #[arg(long, value_name = "STR")]
    pub text: Vec<String>,
    /// A file of queries, one per line (`-`: standard input). A line that
    /// cannot be answered is said on stderr with its number, the others
    /// are answered, and the exit code is 2.
    #[arg(long, value_name = "FILE")]
    pub batch: Option<PathBuf>,
    /// Results per query.
    #[arg(
        short = 'k',
        long = "top",
        alias = "k",
        value_name = "N",
        default_value_t = 10,
        allow_negative_numbers = true,
        value_parser = usage::at_least_one::<usize>
    )]
    pub k: usize,
    /// Similarity.
    #[arg(long, value_enum, default_value_t = MetricArg::Cosine)]
    pub metric: MetricArg,
    /// Keep the query's own tokens among the results.
    #[arg(long)]
    pub include_query: bool,
    /// Cut noise from the results (comma-separated or repeated).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub filter: Vec<FilterArg>,
    /// The matrix to search; `head` of a tied model is the embedding.
    #[arg(long, value_enum, default_value_t = MatrixArg::Embed)]
    pub matrix: MatrixArg,
}

/// Arguments of `similarity`.
#[derive(Debug, Args)]
pub struct SimilarityArgs {
    /// Model directory, .safetensors or .gguf file, index file, Hub id or Ollama name.
    pub model: String,
    /// Queries, as `neighbors` takes them: a word, `#ID`, `=entry`, or
    /// terms joined by ` + ` and ` - ` (`"king - man + woman"`).
    #[arg(value_name = "QUERY")]
    pub queries: Vec<String>,
    /// A text whose token rows are averaged into one query (repeatable).
    #[arg(long, value_name = "STR")]
    pub text: Vec<String>,
    /// The matrix to read; `head` of a tied model is the embedding.
    #[arg(long, value_enum, default_value_t = MatrixArg::Embed)]
    pub matrix: MatrixArg,
    /// What is printed on stdout [default: table].
    #[arg(long, value_enum)]
    pub format: Option<SimilarityFormatArg>,
    /// Also draw the cosines into FILE.svg: a heatmap in clustered order
    /// and the queries' map in two principal components, side by side (up
    /// to 256 queries).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// Output format of `similarity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimilarityFormatArg {
    /// Aligned text.
    Table,
    /// One JSON document (same as --json).
    Json,
    /// Comma-separated, a square matrix headed by the queries.
    Csv,
}

/// `--metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Cosine similarity; a zero row scores 0.
    Cosine,
    /// Plain dot product (what logits use, for the head).
    Dot,
}

/// `--matrix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MatrixArg {
    /// The input embedding.
    Embed,
    /// The output head (the embedding itself on a tied model).
    Head,
}

/// `neighbors --filter`: rows a result may come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FilterArg {
    /// Leave out special tokens (BOS, EOS, `[CLS]` ...).
    NoSpecial,
    /// Leave out rows beyond the tokenizer (padding rows no token reaches).
    NoPadding,
    /// Only tokens that contain a letter.
    Letters,
}
