//! The pure statistics the figures and verdicts stand on, with no knowledge of the data
//! format: order statistics and their intervals, Student's t, Welch's test, the
//! Benjamini-Hochberg procedure and change points by binary segmentation. A leaf: `analysis` builds figures, estimates and verdicts on
//! it. The formulas and their references are in `docs/src/reference/statistics.md`.

mod change_points;
mod memo;
mod multiple;
mod order;
mod t;

pub use change_points::{change_points, ChangePoint};
pub use multiple::benjamini_hochberg;
pub use order::{mean, median, min_requests_for_percentile, percentile, percentile_supported, quantile_ranks};
pub use t::{mean_sd, t_quantile, t_two_sided_p, welch, Welch};
