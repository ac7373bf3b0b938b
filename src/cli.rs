//! The command line, as clap derive types. Each field's doc comment is its
//! `--help` text. No logic lives here.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};

use crate::cmd::neighbors::Filter;
use crate::roles::Which;

/// Inspect the vocabulary layers (input embedding and LM head) of a
/// language-model checkpoint, straight from its safetensors files.
///
/// MODEL is a Hugging Face model directory, a .safetensors file, an
/// *.safetensors.index.json, or a Hub id (org/name) already in the local
/// Hugging Face cache. Nothing is ever downloaded; files are opened read-only.
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

/// Options every command takes.
#[derive(Debug, Args)]
pub struct Global {
    /// Print one JSON document on stdout instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    /// The matrix to work on; `head` of a tied model is the embedding.
    #[arg(long, global = true, value_enum, default_value_t = Which::Embed)]
    pub matrix: Which,
    /// Print no notes or progress on stderr, only results and errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Never draw a progress bar.
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Say on stderr how the work was done (`neighbors`: which search
    /// kernel ran, and why).
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Revision of a Hub id in the local cache (branch, tag or commit).
    #[arg(long, global = true, default_value = "main", value_name = "REV")]
    pub revision: String,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Files, config, the embedding and head tensors, tie status, tokenizer.
    Info {
        /// Model directory, .safetensors file, index file or Hub id.
        model: String,
    },
    /// One row per tensor: name, dtype, shape, parameters, bytes, file.
    Tensors {
        /// Model directory, .safetensors file, index file or Hub id.
        model: String,
        /// Only tensors whose name matches this glob (`*` crosses dots), e.g. `*embed*`.
        #[arg(long, value_name = "GLOB")]
        filter: Option<String>,
        /// Row order.
        #[arg(long, value_enum, default_value_t = SortBy::Name)]
        sort: SortBy,
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
    /// Consistency audit: sizes, special tokens, tie, dtypes, tokenizer,
    /// and NaN/zero/duplicate/outlier rows; exit code 1 when a finding is
    /// at or above --fail-on.
    Check(CheckArgs),
}

/// Arguments of `check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Model directory, .safetensors file, index file or Hub id.
    pub model: String,
    /// Exit with code 1 when a finding is at least this severe.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
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
pub enum SortBy {
    /// By name, ascending.
    Name,
    /// By bytes, largest first.
    Size,
}

/// Arguments of `size`.
#[derive(Debug, Args)]
pub struct SizeArgs {
    /// Model directory, .safetensors file, index file or Hub id.
    pub model: String,
    /// What if the vocabulary had N rows.
    #[arg(long, value_name = "N")]
    pub vocab: Option<u64>,
    /// What if the hidden size were N (changes the vocabulary layers only).
    #[arg(long, value_name = "N")]
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
    /// Model directory, .safetensors file, index file or Hub id.
    pub model: String,
    /// Row ids, e.g. `--id 0 42 9906`.
    #[arg(long, num_args = 1.., value_name = "N")]
    pub id: Vec<u64>,
    /// Exact vocabulary entries, as stored (e.g. `Ġking` for byte-level BPE).
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
    /// Output format; `npy` writes a [n, d] float32 array and needs -o.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Write to FILE instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Output format of `lookup`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
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
    /// Model directory, .safetensors file, index file or Hub id.
    pub model: String,
    /// Queries: a vocabulary entry (`Paris`; the leading-space form is tried
    /// too), `#ID`, or terms joined by ` + ` and ` - ` (`"king - man + woman"`).
    #[arg(value_name = "QUERY")]
    pub queries: Vec<String>,
    /// A text whose token rows are averaged into one query (repeatable).
    #[arg(long, value_name = "STR")]
    pub text: Vec<String>,
    /// A file of queries, one per line.
    #[arg(long, value_name = "FILE")]
    pub batch: Option<PathBuf>,
    /// Results per query.
    #[arg(short, long, default_value_t = 10)]
    pub k: usize,
    /// Similarity.
    #[arg(long, value_enum, default_value_t = MetricArg::Cosine)]
    pub metric: MetricArg,
    /// Keep the query's own tokens among the results.
    #[arg(long)]
    pub include_query: bool,
    /// Cut noise from the results (comma-separated or repeated).
    #[arg(long, value_enum, value_delimiter = ',')]
    pub filter: Vec<Filter>,
}

/// `--metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricArg {
    /// Cosine similarity; a zero row scores 0.
    Cosine,
    /// Plain dot product (what logits use, for the head).
    Dot,
}
