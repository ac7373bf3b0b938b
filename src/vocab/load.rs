//! Reading `tokenizer.json` (or, without one, the older files `other_files`
//! converts) and the special-token files beside it into a [`Vocab`]: the
//! entries by id, added and special tokens, and the model's settings the
//! other modules read.

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use super::preview::Preview;
use super::special::{self, SpecialDecl};
use super::{AddedToken, NO_ENTRY, Vocab, other_files, parse};
use crate::error::{Error, Result};

impl Vocab {
    /// Loads the vocabulary of the model in `dir`: `Ok(None)` when there is
    /// no `tokenizer.json` and no older tokenizer files embscope reads
    /// (`vocab.txt`, `vocab.json` + `merges.txt`, a SentencePiece
    /// `tokenizer.model`, a T5 `spiece.model`). `config` is the parsed
    /// `config.json`, read for its special ids (also under `text_config`).
    /// The special-token files are optional: a malformed one declares
    /// nothing and is listed by [`Vocab::unreadable`] (a conversion of
    /// the older files still fails on a malformed file it reads).
    pub fn load(dir: &Path, config: Option<&serde_json::Value>) -> Result<Option<Vocab>> {
        Vocab::load_from(dir, config, false, None)
    }

    /// [`Vocab::load`], keeping tokenizer.json mapped with the places of
    /// its merges when the fast scan read it: for a second look at the
    /// merges without scanning them again (`undertrained`'s reachability
    /// test).
    pub fn load_keeping_merges(
        dir: &Path,
        config: Option<&serde_json::Value>,
    ) -> Result<Option<Vocab>> {
        Vocab::load_from(dir, config, true, None)
    }

    /// [`Vocab::load`], or with `keep_merges` [`Vocab::load_keeping_merges`],
    /// calling `preview` with the id → token table as soon as the scan of
    /// tokenizer.json has read its model vocab, before its merges and the
    /// rest: for a caller that can start on a guess and check it against
    /// the loaded vocabulary. Not called when the scan cannot read the
    /// vocab (then it is parsed with the rest).
    pub fn load_previewing(
        dir: &Path,
        config: Option<&serde_json::Value>,
        keep_merges: bool,
        preview: &mut dyn FnMut(&Preview),
    ) -> Result<Option<Vocab>> {
        Vocab::load_from(dir, config, keep_merges, Some(preview))
    }

    fn load_from(
        dir: &Path,
        config: Option<&serde_json::Value>,
        keep_merges: bool,
        preview: Option<&mut dyn FnMut(&Preview)>,
    ) -> Result<Option<Vocab>> {
        let file = dir.join("tokenizer.json");
        let (file, made) = match crate::regular_file::found(&file, "a JSON file")? {
            Some(_) => (file, None),
            None => match other_files::convert(dir, config)? {
                Some(made) => (made.files[0].clone(), Some(Box::new(made))),
                None => return Ok(None),
            },
        };
        let (raw, source) = match &made {
            None => parse::read(&file, keep_merges, preview)?,
            // Merges are not kept for a class whose encoding is refused:
            // the reachability test then asks the (refusing) tokenizer.
            Some(m) => {
                let keep = keep_merges && m.refused.is_none();
                parse::read_bytes(&file, parse::Bytes::Made(m.json.clone()), keep, preview)?
            }
        };
        let model = parse::model_name(&raw.model);
        let style = parse::detect_style(&raw, &model);
        let merge_prefix = raw
            .model
            .continuing_subword_prefix
            .clone()
            .unwrap_or_default();
        let raw_added = raw.added_tokens.unwrap_or_default();
        let vocab = raw.model.vocab.map(|v| v.entries).unwrap_or_default();

        let mut max_id: Option<u32> = None;
        for id in vocab
            .iter()
            .map(|e| e.id)
            .chain(raw_added.iter().map(|a| a.id))
        {
            if id >= parse::MAX_ID {
                return Err(Error::bad_file(
                    &file,
                    format!("token id {id} is beyond the limit of {}", parse::MAX_ID),
                ));
            }
            max_id = max_id.max(Some(id));
        }
        let size = max_id.map_or(0, |m| m as usize + 1);

        let mut entries = vocab;
        let mut by_id = vec![NO_ENTRY; size];
        let mut shadowed = Vec::new();
        for (index, e) in entries.iter().enumerate() {
            match &mut by_id[e.id as usize] {
                slot @ &mut NO_ENTRY => *slot = index as u32,
                _ => shadowed.push(index as u32),
            }
        }
        // What declares the added special tokens: tokenizer.json, or the
        // conversion of the older files.
        let decl_source = match &made {
            None => "tokenizer.json".to_string(),
            Some(m) => format!(
                "converted {}",
                m.files[0].file_name().unwrap_or_default().to_string_lossy()
            ),
        };
        let mut added = Vec::with_capacity(raw_added.len());
        let mut special_ids = HashSet::new();
        let mut decls_tok = Vec::new();
        for a in raw_added {
            let before = std::mem::replace(&mut by_id[a.id as usize], entries.len() as u32);
            if before != NO_ENTRY {
                shadowed.push(before);
            }
            entries.push(&a.content, a.id, true);
            if a.special {
                special_ids.insert(a.id);
                decls_tok.push(SpecialDecl {
                    source: decl_source.clone(),
                    role: "special".to_string(),
                    id: Some(i64::from(a.id)),
                    token: Some(a.content.clone()),
                });
            }
            added.push(AddedToken {
                id: a.id,
                content: a.content,
                special: a.special,
            });
        }

        let declared = special::collect(dir, config);
        let mut decls = declared.decls;
        decls.extend(decls_tok);
        let config_added = declared
            .config_added
            .into_iter()
            .map(|(id, content, special)| {
                if special {
                    special_ids.insert(id);
                }
                (id, content)
            })
            .collect();

        let mut vocab = Vocab {
            file,
            model,
            style,
            normalizer: raw.normalizer,
            words: OnceLock::new(),
            entries,
            by_id,
            shadowed: {
                shadowed.sort_unstable();
                shadowed
            },
            by_token: OnceLock::new(),
            scans: Default::default(),
            added,
            special_ids,
            decls,
            config_added,
            unreadable: declared.unreadable,
            merge_prefix,
            kinds: Vec::new(),
            gguf: None,
            source: source.map(Box::new),
            made,
            tokenizer: OnceLock::new(),
        };
        let declared: Vec<u32> = vocab
            .decls
            .iter()
            .filter_map(|d| match (&d.token, d.id) {
                (Some(token), _) => vocab.id(token),
                (None, Some(id)) => u32::try_from(id).ok(),
                (None, None) => None,
            })
            .collect();
        vocab.special_ids.extend(declared);
        Ok(Some(vocab))
    }
}
