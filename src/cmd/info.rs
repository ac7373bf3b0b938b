//! `info`: what a download holds: files, config summary, the embedding and
//! head tensors, tie status, tokenizer. Reads headers and small JSON files only.

use std::path::Path;

use serde::Serialize;

use super::TensorSummary;
use crate::checkpoint::{Checkpoint, HubSnapshot, ModelConfig, WeightFormat};
use crate::roles::{Choice, Roles, Tie};
use crate::vocab::{TokenizerSummary, Vocab};

/// Files beside the weights that embscope reads, with their kind.
const SIDE_FILES: &[(&str, &str)] = &[
    ("config.json", "config"),
    ("generation_config.json", "generation config"),
    ("tokenizer.json", "tokenizer"),
    ("tokenizer_config.json", "tokenizer config"),
    ("special_tokens_map.json", "special tokens"),
];

/// The kind of a tokenizer file of an older format that was not read,
/// beside weights with no tokenizer.json (see
/// `Checkpoint::unread_tokenizer_files`); the ones converted are of kind
/// `tokenizer`.
pub const UNREAD: &str = "tokenizer, not read";

/// The `info` report.
#[derive(Debug, Serialize)]
pub struct InfoReport {
    /// MODEL as given.
    pub model: String,
    /// How the weights are stored (`safetensors` or `gguf`).
    pub format: WeightFormat,
    /// The cache snapshot, when MODEL was a Hub id.
    pub hub: Option<HubSnapshot>,
    /// Weight files, index and side files, with sizes.
    pub files: Vec<FileEntry>,
    /// The config, when there is one.
    pub config: Option<ModelConfig>,
    /// The input embedding (null when none was found).
    pub embedding: Option<RoleTensor>,
    /// The stored output head (null when none is stored).
    pub head: Option<RoleTensor>,
    /// Tie flag as written, as resolved, and what the files hold.
    pub tie: Tie,
    /// Number of tensors in all shards.
    pub tensor_count: usize,
    /// The tokenizer, when `tokenizer.json` is there.
    pub tokenizer: Option<TokenizerSummary>,
    /// Every added token (tokenizer.json `added_tokens`; for a GGUF
    /// vocabulary, its control and user-defined tokens), in file order.
    pub added_tokens: Vec<AddedEntry>,
}

/// One added token.
#[derive(Debug, Serialize)]
pub struct AddedEntry {
    /// The id it is added under.
    pub id: u32,
    /// Its text.
    pub text: String,
    /// Whether it is marked special.
    pub special: bool,
}

/// One file of the checkpoint.
#[derive(Debug, Serialize)]
pub struct FileEntry {
    /// Path as found.
    pub path: String,
    /// `file` (the one weights file), `shard`, `index`, `config`,
    /// `tokenizer` ..., or [`UNREAD`] for an older tokenizer file.
    pub kind: String,
    /// Size on disk.
    pub bytes: u64,
    /// Tensors in it (weights files only).
    pub tensors: Option<usize>,
}

/// A tensor in a role, with why it was chosen.
#[derive(Debug, Serialize)]
pub struct RoleTensor {
    /// The tensor.
    #[serde(flatten)]
    pub tensor: TensorSummary,
    /// Why this tensor, and which others were passed over.
    pub chosen: Choice,
}

/// Builds the `info` report.
pub fn run(ckpt: &Checkpoint, roles: &Roles, vocab: Option<&Vocab>) -> InfoReport {
    let mut files = Vec::new();
    if let Some(index) = &ckpt.sources.index {
        files.push(file_entry(index, "index"));
    }
    // One file that is all the weights is not a shard of anything.
    let kind = match ckpt.format {
        WeightFormat::Gguf => "gguf",
        _ if ckpt.shards.len() == 1 && ckpt.sources.index.is_none() => "file",
        WeightFormat::Safetensors => "shard",
    };
    for shard in &ckpt.shards {
        files.push(FileEntry {
            path: shard.path.display().to_string(),
            kind: kind.into(),
            bytes: shard.map.len() as u64,
            tensors: Some(shard.tensor_count),
        });
    }
    for (name, kind) in SIDE_FILES {
        let p = ckpt.sources.dir.join(name);
        if p.is_file() {
            files.push(file_entry(&p, kind));
        }
    }
    let converted = vocab.and_then(Vocab::converted);
    let read = converted.as_ref().map_or(&[][..], |c| &c.files[..]);
    for path in read {
        files.push(file_entry(path, "tokenizer"));
    }
    for name in ckpt.unread_tokenizer_files() {
        let path = ckpt.sources.dir.join(name);
        if !read.contains(&path) {
            files.push(file_entry(&path, UNREAD));
        }
    }
    let role = |c: &Option<Choice>| {
        c.as_ref().map(|c| RoleTensor {
            tensor: TensorSummary::of(ckpt, &ckpt.tensors[&c.name]),
            chosen: c.clone(),
        })
    };
    InfoReport {
        model: ckpt.model.clone(),
        format: ckpt.format,
        hub: ckpt.sources.hub.clone(),
        files,
        config: ckpt.config.clone(),
        embedding: role(&roles.embedding),
        head: role(&roles.head),
        tie: roles.tie.clone(),
        tensor_count: ckpt.tensors.len(),
        tokenizer: vocab.map(Vocab::summary),
        added_tokens: (vocab.map_or(&[][..], Vocab::added_tokens).iter())
            .map(|a| AddedEntry {
                id: a.id,
                text: a.content.clone(),
                special: a.special,
            })
            .collect(),
    }
}

fn file_entry(p: &Path, kind: &str) -> FileEntry {
    FileEntry {
        path: p.display().to_string(),
        kind: kind.into(),
        bytes: std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
        tensors: None,
    }
}
