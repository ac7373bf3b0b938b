//! `--data FILE`: the tokens a training set feeds the model, counted, and
//! which of them have rows that look untrained (`data-uses-untrained`),
//! with a `data-summary` note and warnings for lines it cannot read.
//!
//! A file is plain text (each line encoded as it is) or JSONL (its first
//! line a JSON object, or its name ending `.jsonl`): each line's `text`,
//! or its `messages` rendered through the chat template (the one checked,
//! see `template`; without one, their contents are counted as text and a
//! warning says so). The file is read in batches of lines of about
//! [`BATCH_BYTES`] (a line is cut off at [`MAX_LINE_BYTES`]), so a 1 GB
//! file is never held; each batch is encoded on every core, each worker
//! counting into arrays of its own (occurrences and the first line per
//! id), summed once at the end.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde_json::{Value, json};

use super::untrained_rows::UntrainedRows;
use super::{Finding, MAX_LISTED, Severity, Subject, cut};
use crate::vocab::Vocab;
use crate::vocab::chat_template::Renderer;
use crate::{Error, Result};

/// Bytes of lines encoded at a time: enough for every core to have
/// thousands of lines, little enough to hold.
const BATCH_BYTES: usize = 8 << 20;

/// A line longer than this is cut off there (and its rest skipped): one
/// training example is rarely more than a few hundred kB.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Frequent special tokens the summary names.
const TOP_SPECIALS: usize = 10;

/// A data file given with `--data`, opened (a missing one is bad input,
/// before any work is done).
#[derive(Debug)]
pub struct DataFile {
    path: PathBuf,
    file: File,
}

impl DataFile {
    /// Opens `path` for reading.
    pub fn open(path: &Path) -> Result<DataFile> {
        crate::regular_file::input(path, "a data file (text or JSONL)")?;
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        Ok(DataFile {
            path: path.to_path_buf(),
            file,
        })
    }
}

/// A line the count could not use, and why.
#[derive(Debug, Clone)]
struct BadLine {
    /// Which file (index into the files) and line (1-based), packed by [`at`].
    at: u64,
    why: &'static str,
}

/// One file and line, packed so that the earliest is the least: the file's
/// index above bit 40, the 1-based line below.
fn at(file: usize, line: u64) -> u64 {
    ((file as u64) << 40) | line.min((1 << 40) - 1)
}

/// What the files hold, counted.
#[derive(Debug, Default)]
pub(super) struct Counted {
    /// The files, as given.
    files: Vec<String>,
    /// Lines read.
    lines: u64,
    /// Tokens counted.
    tokens: u64,
    /// Occurrences per id.
    counts: Vec<u64>,
    /// The first place of each id ([`at`]; `u64::MAX` for none).
    first: Vec<u64>,
    /// Lines that could not be used, the first [`MAX_LISTED`] per reason
    /// and file, and how many in all.
    bad: Vec<BadLine>,
    bad_total: u64,
    /// `messages` lines counted as text for want of a template: how many,
    /// and the first.
    untemplated: (u64, u64),
    /// Why the data could not be counted at all (no tokenizer, a read
    /// error), if so.
    failed: Option<String>,
}

/// One worker's arrays.
struct Worker {
    counts: Vec<u64>,
    first: Vec<u64>,
    tokens: u64,
    bad: Vec<BadLine>,
    bad_total: u64,
    untemplated: (u64, u64),
}

impl Worker {
    fn new(size: usize) -> Worker {
        Worker {
            counts: vec![0; size],
            first: vec![u64::MAX; size],
            tokens: 0,
            bad: Vec::new(),
            bad_total: 0,
            untemplated: (0, u64::MAX),
        }
    }

    fn count(&mut self, ids: &[u32], place: u64) {
        self.tokens += ids.len() as u64;
        for &id in ids {
            if let Some(c) = self.counts.get_mut(id as usize) {
                *c += 1;
                let f = &mut self.first[id as usize];
                *f = (*f).min(place);
            }
        }
    }

    fn bad(&mut self, place: u64, why: &'static str) {
        self.bad_total += 1;
        if self.bad.len() < MAX_LISTED * 4 {
            self.bad.push(BadLine { at: place, why });
        }
    }
}

/// Counts the tokens of `files` as `vocab` encodes them, rendering
/// `messages` lines with `renderer` when there is one.
pub(super) fn count(
    files: &[DataFile],
    vocab: Option<&Vocab>,
    renderer: Option<&Renderer>,
) -> Counted {
    let mut out = Counted {
        files: files.iter().map(|f| f.path.display().to_string()).collect(),
        ..Counted::default()
    };
    if files.is_empty() {
        return out;
    }
    let Some(vocab) = vocab else {
        out.failed = Some("no tokenizer to encode it with".into());
        return out;
    };
    // A tokenizer that cannot encode at all says so once, not per line.
    if let Err(e) = vocab.encode_ids("") {
        out.failed = Some(e.to_string());
        return out;
    }
    let size = vocab.size();
    let slots = rayon::current_num_threads() + 1;
    let workers: Vec<Mutex<Worker>> = (0..slots).map(|_| Mutex::new(Worker::new(size))).collect();
    for (index, f) in files.iter().enumerate() {
        let jsonl = f
            .path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "ndjson");
        match read_file(index, f, jsonl, &workers, vocab, renderer) {
            Ok(lines) => out.lines += lines,
            Err(e) => {
                out.failed = Some(e.to_string());
                return out;
            }
        }
    }
    // The workers' arrays, summed.
    let mut all = Worker::new(size);
    for w in workers {
        let w = w.into_inner().unwrap_or_else(|e| e.into_inner());
        all.counts
            .iter_mut()
            .zip(&w.counts)
            .for_each(|(a, b)| *a += b);
        all.first
            .iter_mut()
            .zip(&w.first)
            .for_each(|(a, b)| *a = (*a).min(*b));
        all.tokens += w.tokens;
        all.bad.extend(w.bad);
        all.bad_total += w.bad_total;
        all.untemplated.0 += w.untemplated.0;
        all.untemplated.1 = all.untemplated.1.min(w.untemplated.1);
    }
    all.bad.sort_by_key(|b| b.at);
    out.tokens = all.tokens;
    out.counts = all.counts;
    out.first = all.first;
    out.bad = all.bad;
    out.bad_total = all.bad_total;
    out.untemplated = all.untemplated;
    out
}

/// Reads file `index` batch by batch, counting each batch on every core;
/// returns its number of lines. JSONL when `jsonl`, or when its first
/// line is a JSON object.
fn read_file(
    index: usize,
    f: &DataFile,
    mut jsonl: bool,
    workers: &[Mutex<Worker>],
    vocab: &Vocab,
    renderer: Option<&Renderer>,
) -> Result<u64> {
    let mut reader = BufReader::with_capacity(1 << 20, &f.file);
    let mut line_no = 0u64;
    let mut first = true;
    loop {
        let mut batch: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut bytes = 0;
        while bytes < BATCH_BYTES {
            let mut line = Vec::new();
            if !read_line(&mut reader, &mut line).map_err(|e| Error::io(&f.path, e))? {
                break;
            }
            line_no += 1;
            if first {
                jsonl |= line.trim_ascii_start().starts_with(b"{")
                    && serde_json::from_slice::<Value>(&line).is_ok_and(|v| v.is_object());
                first = false;
            }
            bytes += line.len() + 64;
            batch.push((line_no, line));
        }
        if batch.is_empty() {
            return Ok(line_no);
        }
        let chunk = batch.len().div_ceil(workers.len() * 4).max(1);
        batch.par_chunks(chunk).for_each(|lines| {
            let slot = rayon::current_thread_index()
                .map_or(workers.len() - 1, |i| i.min(workers.len() - 2));
            let mut w = workers[slot].lock().unwrap_or_else(|e| e.into_inner());
            for (n, line) in lines {
                one_line(&mut w, at(index, *n), line, jsonl, vocab, renderer);
            }
        });
    }
}

/// Reads one line (without its `\n` or `\r\n`) into `line`, cut off at
/// [`MAX_LINE_BYTES`]; false at the end of the file.
fn read_line(reader: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<bool> {
    let n = reader
        .by_ref()
        .take(MAX_LINE_BYTES as u64)
        .read_until(b'\n', line)?;
    if n == 0 {
        return Ok(false);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if n == MAX_LINE_BYTES {
        // The rest of a long line, skipped.
        let mut rest = Vec::new();
        while reader.by_ref().take(1 << 20).read_until(b'\n', &mut rest)? > 0
            && rest.last() != Some(&b'\n')
        {
            rest.clear();
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(true)
}

/// Counts one line into `w`.
fn one_line(
    w: &mut Worker,
    place: u64,
    line: &[u8],
    jsonl: bool,
    vocab: &Vocab,
    renderer: Option<&Renderer>,
) {
    let Ok(text) = std::str::from_utf8(line) else {
        return w.bad(place, "not UTF-8");
    };
    if !jsonl {
        match vocab.encode_ids(text) {
            Ok(ids) => w.count(&ids, place),
            Err(_) => w.bad(place, "cannot be encoded"),
        }
        return;
    }
    if text.trim().is_empty() {
        return;
    }
    let Ok(v) = serde_json::from_str::<Value>(text) else {
        return w.bad(place, "not JSON");
    };
    let texts: Vec<std::borrow::Cow<str>> = match (v.get("text"), v.get("messages")) {
        (Some(Value::String(t)), _) => vec![t.as_str().into()],
        (_, Some(messages @ Value::Array(list))) => match renderer {
            Some(r) => match r.render(messages, false) {
                Ok(t) => vec![t.into()],
                Err(_) => return w.bad(place, "its messages do not render"),
            },
            None => {
                w.untemplated.0 += 1;
                w.untemplated.1 = w.untemplated.1.min(place);
                list.iter()
                    .filter_map(|m| m.get("content")?.as_str())
                    .map(Into::into)
                    .collect()
            }
        },
        _ => return w.bad(place, "has neither `text` nor `messages`"),
    };
    for t in texts {
        match vocab.encode_ids(&t) {
            Ok(ids) => w.count(&ids, place),
            Err(_) => return w.bad(place, "cannot be encoded"),
        }
    }
}

/// `data.jsonl:4`.
fn place(c: &Counted, at: u64) -> String {
    let file = (at >> 40) as usize;
    let line = at & ((1 << 40) - 1);
    format!("{}:{line}", c.files.get(file).map_or("?", String::as_str))
}

/// The findings known from the count alone: lines that could not be used,
/// `messages` without a template, data that could not be counted.
pub(super) fn early_findings(c: &Counted) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(why) = &c.failed {
        out.push(Finding::new(
            Severity::Warn,
            "data-unchecked",
            format!("the data is not checked against the rows: {why}"),
            json!({"files": c.files}),
        ));
    }
    if c.bad_total > 0 {
        let listed: Vec<Value> = c
            .bad
            .iter()
            .take(MAX_LISTED)
            .map(|b| json!({"line": place(c, b.at), "why": b.why}))
            .collect();
        let first = &c.bad[0];
        out.push(Finding::new(
            Severity::Warn,
            "data-bad-lines",
            format!(
                "{} line(s) of the data are not counted, the first {} ({}); the rest are",
                c.bad_total,
                place(c, first.at),
                first.why
            ),
            json!({"lines": listed, "total": c.bad_total, "truncated": cut(c.bad_total as usize)}),
        ));
    }
    if c.untemplated.0 > 0 {
        out.push(Finding::new(
            Severity::Warn,
            "data-messages-without-template",
            format!(
                "{} line(s) of the data hold `messages` (the first {}) but the model has no chat template: their contents are counted as text; give the template you train with, --chat-template FILE|MODEL",
                c.untemplated.0,
                place(c, c.untemplated.1)
            ),
            json!({"lines": c.untemplated.0, "first": place(c, c.untemplated.1)}),
        ));
    }
    out
}

/// The `data-uses-untrained` error (every used token whose row looks
/// untrained, most used first) and the `data-summary` note.
pub(super) fn findings(s: &Subject, c: &Counted, rows: &UntrainedRows) -> Vec<Finding> {
    if c.files.is_empty() || c.failed.is_some() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let used = || (0..c.counts.len() as u32).filter(|&id| c.counts[id as usize] > 0);
    let mut bad: Vec<u32> = used().filter(|&id| rows.looks_untrained(id)).collect();
    bad.sort_by_key(|&id| (std::cmp::Reverse(c.counts[id as usize]), id));
    let token = |id: u32| s.vocab.and_then(|v| v.readable(id));
    if !bad.is_empty() {
        let phrase: Vec<String> = bad
            .iter()
            .take(4)
            .map(|&id| {
                format!(
                    "{id} \"{}\" ({} time(s), first at {})",
                    token(id).unwrap_or_default(),
                    c.counts[id as usize],
                    place(c, c.first[id as usize])
                )
            })
            .collect();
        let more = match bad.len() {
            n if n > 4 => format!(", … {} more", n - 4),
            _ => String::new(),
        };
        let tokens: Vec<Value> = bad
            .iter()
            .map(|&id| {
                let mut e = rows.evidence(s, id);
                e["occurrences"] = json!(c.counts[id as usize]);
                e["first_line"] = json!(place(c, c.first[id as usize]));
                e
            })
            .collect();
        out.push(Finding::new(
            Severity::Error,
            "data-uses-untrained",
            format!(
                "the data uses {} token(s) whose rows look untrained: {}{more}; training on it feeds the model untrained rows",
                bad.len(),
                phrase.join(", ")
            ),
            json!({"files": c.files, "tokens": tokens, "total": bad.len()}),
        ));
    }
    let mut specials: Vec<u32> = used()
        .filter(|&id| s.vocab.is_some_and(|v| v.is_special(id)))
        .collect();
    specials.sort_by_key(|&id| (std::cmp::Reverse(c.counts[id as usize]), id));
    specials.truncate(TOP_SPECIALS);
    let listed: Vec<Value> = specials
        .iter()
        .map(|&id| json!({"id": id, "token": token(id), "occurrences": c.counts[id as usize]}))
        .collect();
    let named: Vec<String> = specials
        .iter()
        .map(|&id| {
            format!(
                "{id} \"{}\" ×{}",
                token(id).unwrap_or_default(),
                c.counts[id as usize]
            )
        })
        .collect();
    out.push(Finding::new(
        Severity::Info,
        "data-summary",
        format!(
            "the data has {} line(s) and {} token(s) ({} distinct){}",
            c.lines,
            c.tokens,
            used().count(),
            match named.is_empty() {
                true => "; no special tokens".to_string(),
                false => format!("; most frequent special tokens: {}", named.join(", ")),
            }
        ),
        json!({
            "files": c.files, "lines": c.lines, "tokens": c.tokens,
            "distinct": used().count(), "special": listed,
            "untrained_tokens": bad.len(),
        }),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_lose_their_ends_and_the_last_needs_none() {
        let mut r = std::io::Cursor::new(b"a\r\nb\n\nc".to_vec());
        let mut got = Vec::new();
        let mut line = Vec::new();
        while read_line(&mut r, &mut line).unwrap() {
            got.push(String::from_utf8(std::mem::take(&mut line)).unwrap());
        }
        assert_eq!(got, ["a", "b", "", "c"]);
    }

    #[test]
    fn places_order_by_file_then_line() {
        assert!(at(0, 5) < at(0, 6));
        assert!(at(0, u64::MAX) < at(1, 1));
        let c = Counted {
            files: vec!["a.txt".into(), "b.jsonl".into()],
            ..Counted::default()
        };
        assert_eq!(place(&c, at(1, 42)), "b.jsonl:42");
    }
}
