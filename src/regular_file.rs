//! The rule for every file embscope reads, the model's and those beside
//! it: it is a regular file. A FIFO blocks `open` until some process
//! writes to it, and a device such as `/dev/zero` never ends, so anything
//! else is refused from its metadata, before it is opened, with a one-line
//! [`Error::NotRegularFile`] that says what it is.
//!
//! The files a user names for input of their own (`--batch FILE`,
//! `--batch -`, `--data FILE`) are held to less: a pipe is the point
//! there (`--data <(zcat data.jsonl.gz)`), but a device such as
//! `/dev/zero` still never ends, and a directory is no input ([`input`]).

use std::fs::Metadata;
use std::path::Path;

use crate::{Error, Result};

/// The metadata of the regular file at `path`; `Ok(None)` when nothing is
/// there, and an error naming what is there instead (and `expected`) for
/// anything else. Symbolic links are followed, as the Hugging Face cache
/// links every file of a snapshot to a blob.
pub fn found(path: &Path, expected: &'static str) -> Result<Option<Metadata>> {
    match std::fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(Some(meta)),
        Ok(meta) => Err(Error::NotRegularFile {
            path: path.to_path_buf(),
            kind: kind(&meta),
            expected,
        }),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(Error::io(path, err)),
    }
}

/// Checks that `path`, input a user named, is a regular file or a FIFO
/// (a pipe, process substitution); a directory, device or socket is an
/// error naming what it is and `expected`. A path where nothing is, or
/// that cannot be looked at, is left for opening it to report.
pub fn input(path: &Path, expected: &'static str) -> Result<()> {
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    #[cfg(unix)]
    let fifo = std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type());
    #[cfg(not(unix))]
    let fifo = false;
    if meta.is_file() || fifo {
        return Ok(());
    }
    Err(Error::NotRegularFile {
        path: path.to_path_buf(),
        kind: kind(&meta),
        expected,
    })
}

/// What a path that is not a regular file is, in words.
pub fn kind(meta: &Metadata) -> &'static str {
    if meta.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    "a FIFO, device or socket"
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn input_takes_files_and_pipes_but_no_device_or_directory() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("queries.txt");
        assert!(input(&file, "a text file").is_ok());
        std::fs::write(&file, "king").unwrap();
        assert!(input(&file, "a text file").is_ok());
        let err = input(Path::new("/dev/zero"), "a text file").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is not a regular file (a character device); expected a text file"),
            "{err}"
        );
        assert!(input(dir.path(), "a text file").is_err());
    }

    #[test]
    fn regular_files_absent_ones_and_the_rest_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.json");
        assert!(found(&file, "a JSON file").unwrap().is_none());
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(found(&file, "a JSON file").unwrap().unwrap().len(), 2);
        let err = found(dir.path(), "a JSON file").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is not a regular file (a directory); expected a JSON file")
        );
        let err = found(Path::new("/dev/null"), "a JSON file").unwrap_err();
        assert!(
            matches!(
                err,
                Error::NotRegularFile {
                    kind: "a character device",
                    ..
                }
            ),
            "{err}"
        );
    }
}
