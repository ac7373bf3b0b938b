//! MODEL as an Ollama model name (`llama3.2:1b`, `user/model:tag`,
//! `host/user/model:tag`): the GGUF blob that the model's manifest names in
//! Ollama's local store. Nothing is downloaded.
//!
//! The store is `OLLAMA_MODELS` when set, else `~/.ollama/models`, else the
//! Linux service's `/usr/share/ollama/.ollama/models`. A name is
//! `[host/][namespace/]model[:tag]`, by default `registry.ollama.ai`,
//! `library` and `latest`; its manifest is
//! `manifests/HOST/NAMESPACE/MODEL/TAG`, a JSON document whose layer of
//! media type `application/vnd.ollama.image.model` has the digest
//! `sha256:HEX` of the weights, stored as `blobs/sha256-HEX`.

use std::path::{Path, PathBuf};

use super::hub_cache::plain_part;
use crate::{Error, Result};

/// The media type of the weights' layer.
const MODEL_LAYER: &str = "application/vnd.ollama.image.model";

/// An Ollama model name, with its defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Name {
    host: String,
    namespace: String,
    model: String,
    tag: String,
}

impl Name {
    /// Parses `[host/][namespace/]model[:tag]`; `None` for anything else
    /// (each part letters, digits, `.`, `-` and `_`, not starting with `.`).
    pub(super) fn parse(s: &str) -> Option<Name> {
        let (path, tag) = match s.rsplit_once(':') {
            Some((path, tag)) if !tag.contains('/') => (path, tag),
            _ => (s, "latest"),
        };
        let parts: Vec<&str> = path.split('/').collect();
        if !plain_part(tag) || !parts.iter().all(|p| plain_part(p)) {
            return None;
        }
        let (host, namespace, model) = match parts[..] {
            [model] => ("registry.ollama.ai", "library", model),
            [namespace, model] => ("registry.ollama.ai", namespace, model),
            [host, namespace, model] => (host, namespace, model),
            _ => return None,
        };
        Some(Name {
            host: host.into(),
            namespace: namespace.into(),
            model: model.into(),
            tag: tag.into(),
        })
    }

    /// The manifest's path under a store.
    fn manifest(&self, store: &Path) -> PathBuf {
        store
            .join("manifests")
            .join(&self.host)
            .join(&self.namespace)
            .join(&self.model)
            .join(&self.tag)
    }
}

/// The stores looked in, in order (see the module docs).
fn stores() -> Vec<PathBuf> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("OLLAMA_MODELS") {
        return vec![PathBuf::from(p)];
    }
    let mut out = Vec::new();
    if let Some(home) = var("HOME") {
        out.push(PathBuf::from(home).join(".ollama").join("models"));
    }
    out.push(PathBuf::from("/usr/share/ollama/.ollama/models"));
    out
}

/// The weights' blob of `name`, with a note for the user saying which; `None`
/// when no store holds its manifest.
pub(super) fn find(given: &str, name: &Name) -> Option<Result<(PathBuf, String)>> {
    let store = stores().into_iter().find(|s| name.manifest(s).is_file())?;
    Some(blob(given, &store, &name.manifest(&store)))
}

/// Where `name`'s manifest would be, for the error when it is nowhere.
pub(super) fn expected(name: &Name) -> String {
    let paths: Vec<String> = stores()
        .iter()
        .map(|s| format!("`{}`", name.manifest(s).display()))
        .collect();
    paths.join(" or ")
}

/// The blob the manifest at `manifest` names as the weights.
fn blob(given: &str, store: &Path, manifest: &Path) -> Result<(PathBuf, String)> {
    let bad = |msg: String| Error::bad_file(manifest, msg);
    let text = std::fs::read_to_string(manifest).map_err(|e| Error::io(manifest, e))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not an Ollama manifest: {e}")))?;
    let layers = v
        .get("layers")
        .and_then(|l| l.as_array())
        .ok_or_else(|| bad("not an Ollama manifest: no `layers` array".into()))?;
    let layer = layers
        .iter()
        .find(|l| l.get("mediaType").and_then(|m| m.as_str()) == Some(MODEL_LAYER))
        .ok_or_else(|| {
            bad(format!(
                "no layer of media type `{MODEL_LAYER}` (the weights)"
            ))
        })?;
    let digest = layer.get("digest").and_then(|d| d.as_str()).unwrap_or("");
    let hex = digest
        .strip_prefix("sha256:")
        .filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| {
            bad(format!(
                "the weights' digest is `{digest}`, expected `sha256:` and 64 hex digits"
            ))
        })?;
    let path = store.join("blobs").join(format!("sha256-{hex}"));
    if !path.is_file() {
        return Err(bad(format!(
            "the weights' blob `{}` is missing; `ollama pull {given}` fetches it again",
            path.display()
        )));
    }
    let note = format!("{given} is Ollama's blob sha256-{}…", &hex[..12]);
    Ok((path, note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_ollamas_defaults() {
        let n = |host: &str, ns: &str, model: &str, tag: &str| {
            Some(Name {
                host: host.into(),
                namespace: ns.into(),
                model: model.into(),
                tag: tag.into(),
            })
        };
        let r = "registry.ollama.ai";
        assert_eq!(
            Name::parse("llama3.2"),
            n(r, "library", "llama3.2", "latest")
        );
        assert_eq!(
            Name::parse("llama3.2:1b"),
            n(r, "library", "llama3.2", "1b")
        );
        assert_eq!(Name::parse("me/tiny:q8_0"), n(r, "me", "tiny", "q8_0"));
        assert_eq!(
            Name::parse("hf.co/org/repo-GGUF:Q4_K_M"),
            n("hf.co", "org", "repo-GGUF", "Q4_K_M")
        );
        for bad in ["", ":x", "a:", "../x:1", "a/../b", "a/b/c/d", "x y", "a:.."] {
            assert_eq!(Name::parse(bad), None, "{bad}");
        }
    }
}
