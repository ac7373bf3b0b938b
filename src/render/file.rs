//! Output files (`rows -o`, `similarity --plot`), checked before any work
//! and put in place whole at the end: the output is written to a hidden
//! file beside the one asked for, which is renamed over it once complete.
//! So a directory that does not exist or cannot be written is an error in
//! the first milliseconds, not after a pass over the model, and a run
//! that fails or is stopped leaves no half-written file (nor clobbers the
//! one that was there). A path that is no regular file (`/dev/stdout`,
//! a pipe) is written in place, and a link to a file writes the file.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// A file being written.
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    /// The hidden file written and renamed over `target`; `None` when
    /// `path` is written in place (a device or pipe, which a rename would
    /// replace: `/dev/null`, `/dev/stdout`).
    temp: Option<PathBuf>,
    /// What the rename replaces: `path`, or the file a link at `path`
    /// points to.
    target: PathBuf,
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
        let io_fail = |err: io::Error| Error::Write {
            path: path.to_path_buf(),
            err,
        };
        let target = match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(fail("it is a directory; expected a file name".into()));
            }
            Ok(m) if !m.is_file() => {
                let file = OpenOptions::new().write(true).open(path).map_err(io_fail)?;
                return Ok(OutputFile {
                    path: path.to_path_buf(),
                    temp: None,
                    target: path.to_path_buf(),
                    out: Some(BufWriter::new(file)),
                });
            }
            // A link to a file: the file is replaced, the link kept.
            Ok(_) => std::fs::canonicalize(path).map_err(io_fail)?,
            Err(_) => path.to_path_buf(),
        };
        let name = target
            .file_name()
            .ok_or_else(|| fail("expected a file name, not a directory".into()))?;
        let dir = match target.parent() {
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
            .map_err(io_fail)?;
        Ok(OutputFile {
            path: path.to_path_buf(),
            temp: Some(temp),
            target,
            out: Some(BufWriter::new(file)),
        })
    }

    /// Where to write the content.
    pub fn writer(&mut self) -> &mut impl Write {
        self.out.as_mut().expect("not yet committed")
    }

    /// Writes the rest and puts the file in place of `path`.
    pub fn commit(mut self) -> Result<()> {
        let out = self.out.take().expect("committed once");
        let file = out.into_inner().map_err(|e| self.error(e.into_error()))?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        // No fsync first: the rename shows readers the whole file, and an
        // export that a power cut loses is made again; waiting for the
        // disk would add its time to every run.
        drop(file);
        std::fs::rename(&temp, &self.target).map_err(|err| {
            let _ = std::fs::remove_file(&temp);
            self.error(err)
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
    /// A file never put in place is removed: the run failed or stopped.
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
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

    #[cfg(unix)]
    #[test]
    fn a_link_is_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (file, link) = (dir.path().join("a.csv"), dir.path().join("l.csv"));
        std::fs::write(&file, "old").unwrap();
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let mut f = OutputFile::create(&link).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
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
