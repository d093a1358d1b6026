//! Speed Matrix: measure LLM inference servers across a context x concurrency matrix
//! (`site bench`) and publish the measurements as a static website (`site build`).
//!
//! The site pipeline runs one way: [`format`] (load and validate) -> [`analysis`] (figures,
//! run views, groups, comparisons) -> [`render`] (templates, charts) -> [`write`] (atomic
//! output), driven by [`site`]. `docs/src/dev/architecture.md` draws the layers.

pub mod analysis;
pub mod bench;
pub mod format;
pub mod fsutil;
pub mod httpserve;
pub mod import;
pub mod publish;
pub mod redact;
pub mod render;
pub mod serve;
pub mod site;
pub mod stats;
pub mod units;
pub mod write;
