//! The one error type of the crate. Every variant names the file or value at
//! fault and what was expected; `main` prints it as one line and exits with 2.

use std::path::{Path, PathBuf};

/// Everything that can go wrong between the command line and a report.
///
/// Source errors are printed inside the message, never chained as `source`
/// as well, so `{err}` and `{err:#}` print the same single line. Each
/// common kind has a variant of its own, so that callers and tests can
/// tell them apart without reading the message.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be opened, mapped or read.
    #[error("cannot read `{}`: {err}", path.display())]
    Io {
        /// The file at fault.
        path: PathBuf,
        /// What the operating system said.
        err: std::io::Error,
    },
    /// A path is there but is not a regular file (a FIFO, a device, a
    /// socket; a directory where a file is read): reading it could block or
    /// never end, so it is refused before it is opened.
    #[error("`{}` is not a regular file ({kind}); expected {expected}", path.display())]
    NotRegularFile {
        /// The path given or read.
        path: PathBuf,
        /// What it is instead (`a FIFO`, `a character device` ...).
        kind: &'static str,
        /// What was expected there.
        expected: &'static str,
    },
    /// A file was read but its content is not what was expected.
    #[error("`{}`: {msg}", path.display())]
    BadFile {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// MODEL is no path, and no model of that name is in the local caches
    /// (or not at the revision or quantization asked for).
    #[error("`{model}`{what}")]
    ModelNotFound {
        /// The name as given (`org/name`, `org/name:Q4_K_M`, `llama3.2:1b`).
        model: String,
        /// What was looked for and where, from `:` or ` is` on.
        what: String,
    },
    /// A matrix the command needs is not in the checkpoint (no input
    /// embedding, no output head).
    #[error("`{model}`{what}")]
    NoMatrix {
        /// The MODEL argument as given.
        model: String,
        /// Which matrix is missing and what to do, from `:` or ` has` on.
        what: String,
    },
    /// A query needs a tokenizer and the checkpoint has none embscope reads.
    #[error("{what} needs a tokenizer, and there is {missing}; {instead}")]
    NoVocab {
        /// What needs it (`a word query`, `--text`).
        what: String,
        /// Where it was looked for (`no tokenizer.json in `DIR``).
        missing: String,
        /// What works without one.
        instead: String,
    },
    /// A token string that is not an entry of the vocabulary.
    #[error("token `{token}` is not in the vocabulary of `{}`{hint}", vocab.display())]
    UnknownToken {
        /// The string as given.
        token: String,
        /// The tokenizer file read.
        vocab: PathBuf,
        /// Close entries or another way to write it, from `;` on (or empty).
        hint: String,
    },
    /// A row id beyond a matrix.
    #[error(
        "{}id {id} is out of range: `{tensor}` has {rows} rows (ids 0..={})",
        flag.map_or(String::new(), |f| format!("{f}: ")),
        rows.saturating_sub(1)
    )]
    IdOutOfRange {
        /// The option the id was given with (`--reference`); `None` for a
        /// query's id.
        flag: Option<&'static str>,
        /// The id given.
        id: u64,
        /// The matrix.
        tensor: String,
        /// Its rows.
        rows: usize,
    },
    /// Text the tokenizer cannot encode.
    #[error("cannot encode {text:?}: {why}")]
    CannotEncode {
        /// The text.
        text: String,
        /// What the tokenizer said, on one line.
        why: String,
    },
    /// `EMBSCOPE_KERNEL` names a kernel this CPU cannot run for the matrix.
    #[error(
        "EMBSCOPE_KERNEL={name} is not available on this CPU for {what} (available: {available})"
    )]
    UnavailableKernel {
        /// The kernel named.
        name: String,
        /// What the kernel was for (the matrix's dtype).
        what: String,
        /// The kernels it could be, comma-separated.
        available: String,
    },
    /// A command-line value cannot be used: a flag's value, an empty or
    /// malformed query, flags that contradict each other.
    #[error("{0}")]
    BadInput(String),
    /// Writing an output file failed.
    #[error("cannot write `{}`: {err}", path.display())]
    Write {
        /// The file being written.
        path: PathBuf,
        /// What the operating system said.
        err: std::io::Error,
    },
}

impl Error {
    /// A [`Error::BadFile`] for `path`.
    pub fn bad_file(path: &Path, msg: impl Into<String>) -> Self {
        Error::BadFile {
            path: path.to_path_buf(),
            msg: msg.into(),
        }
    }

    /// An [`Error::Io`] for `path`.
    pub fn io(path: &Path, err: std::io::Error) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            err,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_print_the_messages_they_replace() {
        let cases = [
            (
                Error::UnknownToken {
                    token: "kign".into(),
                    vocab: "m/tokenizer.json".into(),
                    hint: "; close entries: king".into(),
                },
                "token `kign` is not in the vocabulary of `m/tokenizer.json`; close entries: king",
            ),
            (
                Error::IdOutOfRange {
                    flag: None,
                    id: 9,
                    tensor: "embed".into(),
                    rows: 4,
                },
                "id 9 is out of range: `embed` has 4 rows (ids 0..=3)",
            ),
            (
                Error::IdOutOfRange {
                    flag: Some("--reference"),
                    id: 4,
                    tensor: "w".into(),
                    rows: 4,
                },
                "--reference: id 4 is out of range: `w` has 4 rows (ids 0..=3)",
            ),
            (
                Error::NotRegularFile {
                    path: "m/config.json".into(),
                    kind: "a FIFO",
                    expected: "a JSON file",
                },
                "`m/config.json` is not a regular file (a FIFO); expected a JSON file",
            ),
            (
                Error::UnavailableKernel {
                    name: "amx".into(),
                    what: "BF16".into(),
                    available: "portable, avx2".into(),
                },
                "EMBSCOPE_KERNEL=amx is not available on this CPU for BF16 (available: portable, avx2)",
            ),
            (
                Error::NoMatrix {
                    model: "m".into(),
                    what: " has no output head (an encoder without an LM head); use --matrix embed"
                        .into(),
                },
                "`m` has no output head (an encoder without an LM head); use --matrix embed",
            ),
            (
                Error::NoVocab {
                    what: "--text".into(),
                    missing: "no tokenizer.json in `m`".into(),
                    instead: "use --id".into(),
                },
                "--text needs a tokenizer, and there is no tokenizer.json in `m`; use --id",
            ),
            (
                Error::ModelNotFound {
                    model: "org/x".into(),
                    what: ": revision `v2` is not in the cache".into(),
                },
                "`org/x`: revision `v2` is not in the cache",
            ),
        ];
        for (err, want) in cases {
            assert_eq!(err.to_string(), want);
        }
    }
}
