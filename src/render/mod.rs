//! Render: page models -> HTML (minijinja), SVG charts (plotters), downloads (CSV, JSON).
//! Formats figures; never computes one.

pub mod charts;
pub mod compare_page;
pub mod downloads;
pub mod heatmap;
pub mod markdown;
pub mod pages;
pub mod templates;

pub use pages::{RenderStats, Sink, SitePages};
