//! A GGUF model split into several files by llama.cpp's `gguf-split`
//! (`NAME-00001-of-00003.gguf` ...), as large models are published. Every
//! split is a GGUF file of its own with the keys `split.no` (from 0),
//! `split.count` and, in the first, `split.tensors.count`; the first holds
//! the model's metadata (and usually the embedding), the last the head.
//! A split is opened as the whole model: all of them, from the first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::Value;

use super::gguf_config::unsigned;
use crate::{Error, Result};

/// What a file's `split.*` keys say, when it is one split of several.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Split {
    /// This file's place, from 0.
    pub no: usize,
    /// How many files the model has.
    pub count: usize,
}

/// The `split.*` keys of `metadata`: `None` for a whole file (no keys, or a
/// count of 1), an error for keys that contradict each other.
pub(super) fn of(path: &Path, metadata: &HashMap<String, Value>) -> Result<Option<Split>> {
    let bad = |msg: String| Error::bad_file(path, msg);
    // A key's value: `None` when absent, an error when not a whole number.
    let key = |k: &'static str| -> Result<Option<u64>> {
        metadata
            .get(k)
            .map(|v| unsigned(v).ok_or_else(|| bad(format!("`{k}` is not a whole number"))))
            .transpose()
    };
    let Some(count) = key("split.count")? else {
        return Ok(None);
    };
    let no = key("split.no")?.unwrap_or(0);
    if count <= 1 && no == 0 {
        return Ok(None);
    }
    if no >= count || count > 9999 {
        return Err(bad(format!(
            "`split.no` {no} and `split.count` {count}: expected a split from 0 to the count − 1, at most 9999 splits"
        )));
    }
    Ok(Some(Split {
        no: no as usize,
        count: count as usize,
    }))
}

/// Checks that the split read from `file` (of the model whose first split
/// is `first`) is split `no` (from 0) of `count`, as its name says.
pub(super) fn check(
    file: &Path,
    first: &Path,
    metadata: &HashMap<String, Value>,
    no: usize,
    count: usize,
) -> Result<()> {
    let got = of(file, metadata)?;
    if got == Some(Split { no, count }) {
        return Ok(());
    }
    let says = got.map_or("it is a whole file".to_string(), |s| {
        format!("split {} of {}", s.no + 1, s.count)
    });
    Err(Error::bad_file(
        file,
        format!(
            "expected split {} of {count} ({}), its `split.*` keys say {says}",
            no + 1,
            first.display()
        ),
    ))
}

/// Checks the first split's `split.tensors.count`, when there, against the
/// `tensors` the splits hold.
pub(super) fn check_count(
    first: &Path,
    metadata: &HashMap<String, Value>,
    tensors: usize,
) -> Result<()> {
    match metadata.get("split.tensors.count").and_then(unsigned) {
        Some(n) if n != tensors as u64 => Err(Error::bad_file(
            first,
            format!("`split.tensors.count` is {n}, but the splits hold {tensors} tensors"),
        )),
        _ => Ok(()),
    }
}

/// `name` less its `gguf-split` ending for split `no` (from 1) of `count`,
/// `-0000no-of-0000count.gguf` (any case); `None` when it does not end so.
fn prefix(name: &str, no: usize, count: usize) -> Option<&str> {
    let suffix = format!("-{no:05}-of-{count:05}.gguf");
    let at = name.len().checked_sub(suffix.len())?;
    (name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(&suffix)).then(|| &name[..at])
}

/// The files of the split model `path` is split `split` of, in order:
/// its name must end as `gguf-split` names them, `-00002-of-00003.gguf`.
pub(super) fn files(path: &Path, split: Split) -> Result<Vec<PathBuf>> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let prefix = prefix(name, split.no + 1, split.count).ok_or_else(|| {
        Error::bad_file(
            path,
            format!(
                "split {} of {} of a model, but not named as `gguf-split` names splits (`NAME-{:05}-of-{:05}.gguf`), so the others cannot be found",
                split.no + 1,
                split.count,
                split.no + 1,
                split.count
            ),
        )
    })?;
    let dir = path.parent().unwrap_or(Path::new(""));
    Ok((1..=split.count)
        .map(|i| dir.join(format!("{prefix}-{i:05}-of-{:05}.gguf", split.count)))
        .collect())
}

/// When `names` (the `.gguf` files of a directory, sorted) are exactly the
/// splits of one model, the first of them.
pub(super) fn first_of_set(names: &[PathBuf]) -> Option<PathBuf> {
    let count = names.len();
    if count < 2 {
        return None;
    }
    let prefix_of = |i: usize| prefix(names[i].file_name()?.to_str()?, i + 1, count);
    let first = prefix_of(0)?;
    (1..count)
        .all(|i| prefix_of(i) == Some(first))
        .then(|| names[0].clone())
}
