//! The heatmap's colour scale: a cell's total tok/s relative to the run's best cell,
//! mapped onto a light-to-deep sequential palette that reads in light and dark mode.

/// Stops of the palette, low to high (a blue-green sequential scale).
const STOPS: [(u8, u8, u8); 5] =
    [(0xed, 0xf8, 0xfb), (0xb2, 0xe2, 0xe2), (0x66, 0xc2, 0xa4), (0x2c, 0xa2, 0x5f), (0x00, 0x6d, 0x2c)];

/// `background` and `color` for a value on a scale whose top is `max`.
pub fn cell_style(value: f64, max: f64) -> String {
    let level = if max > 0.0 && value.is_finite() { (value / max).clamp(0.0, 1.0) } else { 0.0 };
    let pos = level * (STOPS.len() - 1) as f64;
    let i = (pos.floor() as usize).min(STOPS.len() - 2);
    let t = pos - i as f64;
    let lerp = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * t).round() as u8;
    let (a, b) = (STOPS[i], STOPS[i + 1]);
    let (r, g, bl) = (lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2));
    // Dark text on the light half of the scale, light text on the deep half.
    let text = if level < 0.6 { "#10231a" } else { "#ffffff" };
    format!("background:#{r:02x}{g:02x}{bl:02x};color:{text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_of_the_scale() {
        assert_eq!(cell_style(0.0, 100.0), "background:#edf8fb;color:#10231a");
        assert_eq!(cell_style(100.0, 100.0), "background:#006d2c;color:#ffffff");
        assert_eq!(cell_style(250.0, 100.0), cell_style(100.0, 100.0));
        assert_eq!(cell_style(5.0, 0.0), cell_style(0.0, 1.0));
    }
}
