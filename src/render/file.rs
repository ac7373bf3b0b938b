//! Output files (`rows -o`, `similarity --plot`), checked before any work
//! and put in place whole at the end: the output is written to a hidden
//! file beside the one asked for, which is renamed over it once complete.
//! So a directory that does not exist or cannot be written is an error in
//! the first milliseconds, not after a pass over the model, and a run
//! that fails or is stopped leaves no half-written file (nor clobbers the
//! one that was there).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// A file being written.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    temp: PathBuf,
    out: Option<BufWriter<File>>,
}

impl OutputFile {
    /// Starts writing `path`: an error unless its directory exists and
    /// takes a new file, or when `path` is a directory.
    pub fn create(path: &Path) -> Result<OutputFile> {
        let fail = |msg: String| Error::Write {
            path: path.to_path_buf(),
            err: io::Error::other(msg),
        };
        let name = path
            .file_name()
            .ok_or_else(|| fail("expected a file name, not a directory".into()))?;
        if path.is_dir() {
            return Err(fail("it is a directory; expected a file name".into()));
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if !dir.is_dir() {
            let what = if dir.exists() {
                "is not a directory"
            } else {
                "does not exist"
            };
            return Err(fail(format!("directory `{}` {what}", dir.display())));
        }
        let mut hidden = std::ffi::OsString::from(".");
        hidden.push(name);
        hidden.push(format!(".embscope-{}.tmp", std::process::id()));
        let temp = dir.join(hidden);
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|err| Error::Write {
                path: path.to_path_buf(),
                err,
            })?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            temp,
            out: Some(BufWriter::new(file)),
        })
    }

    /// The path asked for.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where to write the content.
    pub fn writer(&mut self) -> &mut impl Write {
        self.out.as_mut().expect("not yet committed")
    }

    /// Writes the rest and puts the file in place of `path`.
    pub fn commit(mut self) -> Result<()> {
        let out = self.out.take().expect("committed once");
        let done = out
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .and_then(|()| std::fs::rename(&self.temp, &self.path));
        done.map_err(|err| {
            let _ = std::fs::remove_file(&self.temp);
            Error::Write {
                path: self.path.clone(),
                err,
            }
        })
    }

    /// An error writing the content, naming the file.
    pub fn error(&self, err: io::Error) -> Error {
        Error::Write {
            path: self.path.clone(),
            err,
        }
    }
}

impl Drop for OutputFile {
    /// A file never committed is removed: the run failed or stopped.
    fn drop(&mut self) {
        if self.out.take().is_some() {
            let _ = std::fs::remove_file(&self.temp);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.svg");
        std::fs::write(&path, "old").unwrap();
        let mut f = OutputFile::create(&path).unwrap();
        f.writer().write_all(b"new").unwrap();
        // Until committed the old file stands.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old");
        f.commit().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        drop(OutputFile::create(&path).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
    }

    #[test]
    fn bad_places_are_errors_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no/such/a.svg");
        let e = OutputFile::create(&missing).unwrap_err().to_string();
        assert!(e.ends_with("/no/such` does not exist"), "{e}");
        let e = OutputFile::create(dir.path()).unwrap_err().to_string();
        assert!(
            e.ends_with("it is a directory; expected a file name"),
            "{e}"
        );
        let file = dir.path().join("f");
        std::fs::write(&file, "").unwrap();
        let e = OutputFile::create(&file.join("a.svg"))
            .unwrap_err()
            .to_string();
        assert!(e.ends_with("/f` is not a directory"), "{e}");
    }
}
