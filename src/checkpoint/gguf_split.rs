//! A GGUF model split into several files by llama.cpp's `gguf-split`
//! (`NAME-00001-of-00003.gguf` ...), as large models are published. Every
//! split is a GGUF file of its own with the keys `split.no` (from 0),
//! `split.count` and, in the first, `split.tensors.count`; the first holds
//! the model's metadata (and usually the embedding), the last the head.
//! A split is opened as the whole model: all of them, from the first.

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
pub(super) fn of(
    path: &Path,
    metadata: &std::collections::HashMap<String, Value>,
) -> Result<Option<Split>> {
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

/// The files of the split model `path` is split `split` of, in order:
/// its name must end as `gguf-split` names them, `-00002-of-00003.gguf`.
pub(super) fn files(path: &Path, split: Split) -> Result<Vec<PathBuf>> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let suffix = format!("-{:05}-of-{:05}.gguf", split.no + 1, split.count);
    let prefix = name
        .len()
        .checked_sub(suffix.len())
        .filter(|&at| name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(&suffix))
        .map(|at| &name[..at])
        .ok_or_else(|| {
            Error::bad_file(
                path,
                format!(
                    "split {} of {} of a model, but not named as `gguf-split` names splits (`NAME{suffix}`), so the others cannot be found",
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
    let prefix_of = |p: &Path, i: usize| -> Option<String> {
        let name = p.file_name()?.to_str()?;
        let suffix = format!("-{i:05}-of-{count:05}.gguf");
        let at = name.len().checked_sub(suffix.len())?;
        (name.is_char_boundary(at) && name[at..].eq_ignore_ascii_case(&suffix))
            .then(|| name[..at].to_string())
    };
    let first = prefix_of(&names[0], 1)?;
    let all = names
        .iter()
        .enumerate()
        .all(|(i, p)| prefix_of(p, i + 1).as_ref() == Some(&first));
    (count > 1 && all).then(|| names[0].clone())
}
