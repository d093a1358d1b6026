//! The heatmap's colour scale: a cell's total tok/s relative to the run's best cell, as one
//! of `LEVELS` steps. Each step is a class (`heat-0` ... `heat-7`) whose background and text
//! colours the stylesheet sets per colour scheme, each pair at least 4.5:1.

/// Steps of the scale.
pub const LEVELS: u8 = 8;

/// The step of `value` on a scale whose top is `max`: 0 (lowest) to `LEVELS - 1`.
pub fn level(value: f64, max: f64) -> u8 {
    let share = if max > 0.0 && value.is_finite() { (value / max).clamp(0.0, 1.0) } else { 0.0 };
    ((share * LEVELS as f64).floor() as u8).min(LEVELS - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_and_steps_of_the_scale() {
        assert_eq!(level(0.0, 100.0), 0);
        assert_eq!(level(100.0, 100.0), 7);
        assert_eq!(level(250.0, 100.0), 7);
        assert_eq!(level(49.9, 100.0), 3);
        assert_eq!(level(50.0, 100.0), 4);
        assert_eq!(level(5.0, 0.0), 0);
        assert_eq!(level(f64::NAN, 10.0), 0);
    }
}
