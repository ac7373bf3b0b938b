//! The one error type of the crate. Every variant names the file or value at
//! fault and what was expected; `main` prints it as one line and exits with 2.

use std::path::{Path, PathBuf};

/// Everything that can go wrong between the command line and a report.
///
/// Source errors are printed inside the message, never chained as `source`
/// as well, so `{err}` and `{err:#}` print the same single line.
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
    /// A file was read but its content is not what was expected.
    #[error("`{}`: {msg}", path.display())]
    BadFile {
        /// The file at fault.
        path: PathBuf,
        /// What is wrong and what was expected.
        msg: String,
    },
    /// A command-line value cannot be used: an unknown token, an id out of
    /// range, a model that cannot be found.
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
