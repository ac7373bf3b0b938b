//! Side files that could not be read: `config.json` (or Mistral's
//! `params.json`), the tokenizer files and the special-token files beside
//! safetensors weights. Each is one fact: which file, and what is wrong
//! with it. A command goes on without a file it can do without (the
//! command line says so in a note), `check` reports each as a finding,
//! and only a command fed by the file stops on it. (A GGUF file's
//! vocabulary is no side file: a fault in it is the weights file's.)

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::Error;

/// A file beside the weights that could not be read, and so was left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Unreadable {
    /// The file.
    pub file: PathBuf,
    /// What is wrong, on one line, without the file's name.
    pub fault: String,
}

impl Unreadable {
    /// The fault in `err`, which reading a file gave: the file it names,
    /// else `file`.
    pub fn from_error(err: &Error, file: &Path) -> Self {
        let (file, fault) = match err {
            Error::BadFile { path, msg } => (path.clone(), msg.clone()),
            Error::Io { path, err } => (path.clone(), format!("cannot read it: {err}")),
            Error::NotRegularFile {
                path,
                kind,
                expected,
            } => (
                path.clone(),
                format!("not a regular file ({kind}); expected {expected}"),
            ),
            other => (file.to_path_buf(), other.to_string()),
        };
        Unreadable { file, fault }
    }

    /// The note a command that goes on without the file prints:
    /// `` `DIR/config.json` is unreadable (not valid JSON …); ignored ``.
    pub fn note(&self) -> String {
        format!(
            "`{}` is unreadable ({}); ignored",
            self.file.display(),
            self.fault
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_the_file_and_the_fault() {
        let dir = Path::new("m");
        let bad = Error::bad_file(&dir.join("config.json"), "not valid JSON (EOF at line 1)");
        let u = Unreadable::from_error(&bad, &dir.join("other.json"));
        assert_eq!(
            u.note(),
            "`m/config.json` is unreadable (not valid JSON (EOF at line 1)); ignored"
        );
        let io = Error::io(
            &dir.join("tokenizer.json"),
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        let u = Unreadable::from_error(&io, Path::new("x"));
        assert_eq!(u.file, dir.join("tokenizer.json"));
        assert!(u.fault.starts_with("cannot read it: "), "{}", u.fault);
        let fifo = Error::NotRegularFile {
            path: dir.join("config.json"),
            kind: "a FIFO",
            expected: "a JSON file",
        };
        assert_eq!(
            Unreadable::from_error(&fifo, Path::new("x")).note(),
            "`m/config.json` is unreadable (not a regular file (a FIFO); expected a JSON file); ignored"
        );
        // An error naming no file is the given file's.
        let other = Error::BadInput("token id 9 is beyond the limit".into());
        let u = Unreadable::from_error(&other, Path::new("m/tokenizer.json"));
        assert_eq!(
            u.note(),
            "`m/tokenizer.json` is unreadable (token id 9 is beyond the limit); ignored"
        );
    }
}
