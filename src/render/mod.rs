//! Render: the analysis -> HTML (minijinja), SVG charts (plotters), downloads (CSV, JSON).
//! Formats figures; never computes one. One module per page kind, `common` for what they
//! share.

pub mod cached;
pub mod cell_page;
pub mod charts;
pub mod common;
pub mod compare_page;
pub mod downloads;
pub mod feeds;
pub mod group_page;
pub mod heatmap;
pub mod leaderboard_page;
pub mod listing;
pub mod llmd_report;
pub mod markdown;
pub mod pareto_page;
pub mod rate_charts;
pub mod run_page;
pub mod series_page;
pub mod site_pages;
pub mod targets_page;
pub mod templates;
pub mod tools_page;

pub use common::{PageContext, RenderStats};
pub use site_pages::SitePages;
