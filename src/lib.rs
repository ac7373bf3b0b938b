//! embscope: inspect the vocabulary layers of a language-model checkpoint.
//!
//! Data flows one way: [`checkpoint`] locates and maps the files, reads the
//! config and indexes every tensor; [`roles`] decides which tensor is the
//! embedding and which the head; the `cmd` modules compute plain reports;
//! `render` prints them as text or JSON.

pub mod dtype;
pub mod error;
pub mod vocab;

pub use error::{Error, Result};
