//! How numbers print on the site, matching the seed pages: `4,673.1` tok/s, `34.2K`
//! prompt tok/s, `1,129 ms`, `6.4 ms`, `30.0 s`, contexts as `8K`/`251K`.

/// Used wherever a figure is absent.
pub const DASH: &str = "—";

/// Groups the integer digits of a formatted number in threes: `4673.1` -> `4,673.1`.
pub fn group_thousands(formatted: &str) -> String {
    let (sign, rest) = match formatted.strip_prefix('-') {
        Some(r) => ("-", r),
        None => ("", formatted),
    };
    let (int, frac) = match rest.find('.') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let mut out = String::with_capacity(formatted.len() + int.len() / 3);
    out.push_str(sign);
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out.push_str(frac);
    out
}

/// One decimal, thousands grouped: total and per-request tok/s, active requests.
pub fn decimal1(v: f64) -> String {
    group_thousands(&fixed(v, 1))
}

/// A setting as people write it: whole numbers without decimals (`20`), others to one
/// decimal (`7.5`).
pub fn setting(v: f64) -> String {
    if v.fract() == 0.0 {
        integer(v)
    } else {
        decimal1(v)
    }
}

/// A request rate as given: 0.5, 2, 12.25 (three decimals at most, no trailing zeros).
pub fn rate(v: f64) -> String {
    let t = format!("{v:.3}");
    t.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure of unknown scale (another tool's own): one decimal from 100, two from 1,
/// four below; thousands grouped.
pub fn general(v: f64) -> String {
    let digits = if v.abs() >= 100.0 {
        1
    } else if v.abs() >= 1.0 {
        2
    } else {
        4
    };
    group_thousands(&fixed(v, digits))
}

/// A number in a message or a download, never hundreds of digits long: as Rust writes it
/// (shortest round trip) from 1e-4 to 1e12, in exponent form outside (`1e308`), empty when
/// not finite.
pub fn brief(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        String::new()
    } else if a == 0.0 || (1e-4..1e12).contains(&a) {
        format!("{v}")
    } else {
        format!("{v:e}")
    }
}

/// A change in percent to one decimal with its sign: `+3.2%`, `-12.0%`.
pub fn signed_pct1(v: f64) -> String {
    format!("{}{v:.1}%", if v > 0.0 { "+" } else { "" })
}

/// A percentage to two decimals, in exponent form past a billion, empty when not finite.
pub fn pct2(v: f64) -> String {
    if !v.is_finite() {
        String::new()
    } else if v.abs() >= 1e9 {
        format!("{v:.2e}")
    } else {
        format!("{v:.2}")
    }
}

/// Whole number, thousands grouped.
pub fn integer(v: f64) -> String {
    group_thousands(&fixed(v, 0))
}

/// `format!("{v:.0}")` or `format!("{v:.1}")`, byte for byte, without the exact decimal
/// expansion std does for each (a site build prints millions of figures). Rounding the
/// scaled value is exact where it is not within rounding error of a tie; ties, huge
/// values and other precisions go to std.
pub fn fixed(v: f64, decimals: u32) -> String {
    let text = rounded(v, decimals).unwrap_or_else(|| format!("{v:.prec$}", prec = decimals as usize));
    without_zero_sign(text)
}

/// A zero is never signed on a page (`-0.0` in a data file, or -0.04 at one decimal).
fn without_zero_sign(text: String) -> String {
    match text.strip_prefix('-') {
        Some(rest) if rest.bytes().all(|b| b == b'0' || b == b'.') => rest.to_string(),
        _ => text,
    }
}

/// `fixed`'s quick way, `None` where it cannot be sure of std's answer.
fn rounded(v: f64, decimals: u32) -> Option<String> {
    let scale = match decimals {
        0 => 1.0,
        1 => 10.0,
        _ => return None,
    };
    let x = v * scale;
    // Below 2^52 a double's fraction is exact enough to see a tie; `v * 10` is off from
    // the exact product by at most half a unit in its last place.
    if x.is_nan() || x.abs() >= 4.5e15 || (x.fract().abs() - 0.5).abs() <= x.abs() * 2.3e-16 {
        return None;
    }
    let sign = if v.is_sign_negative() { "-" } else { "" };
    let n = (x.round() as i64).unsigned_abs();
    Some(match decimals {
        0 => format!("{sign}{n}"),
        _ => format!("{sign}{}.{}", n / 10, n % 10),
    })
}

/// `34.2K` for thousands (trailing `.0` dropped: `35K`), `1.2M` for millions, one decimal below.
pub fn compact(v: f64) -> String {
    let (scaled, suffix) = if v.abs() >= 999_950.0 {
        (v / 1_000_000.0, "M")
    } else if v.abs() >= 1000.0 {
        (v / 1000.0, "K")
    } else {
        return decimal1(v);
    };
    let s = fixed(scaled, 1);
    let s = s.strip_suffix(".0").unwrap_or(&s);
    format!("{s}{suffix}")
}

/// Dollars: cents from a dollar up (`$1.25`), three significant digits below (`$0.0123`).
pub fn dollars(v: f64) -> String {
    if v.abs() >= 1.0 || v == 0.0 {
        format!("${}", group_thousands(&format!("{v:.2}")))
    } else {
        let digits = (2 - v.abs().log10().floor() as i32).clamp(2, 8) as usize;
        format!("${v:.digits$}")
    }
}

/// Milliseconds as a whole number: `1,129 ms`.
pub fn millis(v: f64) -> String {
    format!("{} ms", integer(v))
}

/// Milliseconds with one decimal: `6.4 ms`.
pub fn millis1(v: f64) -> String {
    format!("{} ms", decimal1(v))
}

/// Seconds with one decimal: `30.0 s`.
pub fn seconds1(v: f64) -> String {
    format!("{} s", decimal1(v))
}

/// A setting in seconds: `30 s`, `2.5 s`, at most two decimals (`89.42 s`).
pub fn seconds_setting(v: f64) -> String {
    let s = format!("{v:.2}");
    format!("{} s", s.trim_end_matches('0').trim_end_matches('.'))
}

/// Context length label: multiples of 1024 as `8K`, `251K`; halves as `1.5K`; else tokens.
pub fn context_label(tokens: u32) -> String {
    if tokens >= 1024 && tokens.is_multiple_of(1024) {
        format!("{}K", tokens / 1024)
    } else if tokens >= 1024 && tokens.is_multiple_of(512) {
        format!("{}.5K", tokens / 1024)
    } else {
        integer(tokens as f64)
    }
}

/// A context as URLs write it: the label in lower case, without grouping (`8k`, `1.5k`, `1000`).
pub fn context_slug(tokens: u32) -> String {
    context_label(tokens).to_lowercase().replace(',', "")
}

/// `f(v)`, or the dash for an absent or non-finite figure.
pub fn or_dash(v: Option<f64>, f: fn(f64) -> String) -> String {
    v.filter(|x| x.is_finite()).map_or_else(|| DASH.to_string(), f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn fixed_prints_as_std_at_ties_signs_and_edges() {
        let ties_and_signs = [0.0, -0.0, 0.05, 0.15, 0.25, 0.45, -0.05, -0.4, -0.5, 0.5, 1.5, 2.5, -2.5, 9.95, 4673.05];
        let edges =
            [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, f64::MIN_POSITIVE, 0.049999999999999996, 0.44999999999999996];
        let large = [1234567.85, 1e15, 4.5e15, 4.6e15, 1e300, -1e300];
        let values = ties_and_signs.into_iter().chain(edges).chain(large);
        for v in values {
            assert_eq!(fixed(v, 0), without_zero_sign(format!("{v:.0}")), "{v:e} at 0 decimals");
            assert_eq!(fixed(v, 1), without_zero_sign(format!("{v:.1}")), "{v:e} at 1 decimal");
            assert_eq!(fixed(v, 3), without_zero_sign(format!("{v:.3}")), "{v:e} at 3 decimals");
        }
    }

    proptest! {
        #[test]
        fn fixed_prints_as_std(v in -1e7f64..1e7, tenths in -100_000_000i64..100_000_000, bits in any::<u64>()) {
            // Any value, a tie or near-tie at one decimal (`x.y5`), any bit pattern.
            for v in [v, tenths as f64 / 10.0 + 0.05, f64::from_bits(bits)] {
                prop_assert_eq!(fixed(v, 0), without_zero_sign(format!("{v:.0}")));
                prop_assert_eq!(fixed(v, 1), without_zero_sign(format!("{v:.1}")));
            }
        }
    }

    #[test]
    fn settings_in_seconds_drop_needless_decimals() {
        assert_eq!(seconds_setting(30.0), "30 s");
        assert_eq!(seconds_setting(2.5), "2.5 s");
        assert_eq!(seconds_setting(89.41666436195374), "89.42 s");
        assert_eq!(seconds_setting(0.0), "0 s");
    }

    #[test]
    fn general_figures_keep_digits_by_scale() {
        assert_eq!(general(15828.74), "15,828.7");
        assert_eq!(general(15.8287), "15.83");
        assert_eq!(general(0.409786), "0.4098");
        assert_eq!(general(-2.5), "-2.50");
    }

    #[test]
    fn formats_match_the_seed_pages() {
        assert_eq!(decimal1(4673.1), "4,673.1");
        assert_eq!(decimal1(156.7), "156.7");
        assert_eq!(compact(34200.0), "34.2K");
        assert_eq!(compact(35000.0), "35K");
        assert_eq!(compact(20000.0), "20K");
        assert_eq!(compact(165.0), "165.0");
        assert_eq!(millis(1129.0), "1,129 ms");
        assert_eq!(millis(44.0), "44 ms");
        assert_eq!(millis1(6.4), "6.4 ms");
        assert_eq!(seconds1(30.0), "30.0 s");
        assert_eq!(integer(140160.0), "140,160");
        assert_eq!(integer(12261.0), "12,261");
        assert_eq!(group_thousands("-1234567.25"), "-1,234,567.25");
        assert_eq!(dollars(1234.5), "$1,234.50");
        assert_eq!(
            (fixed(-0.0, 1), fixed(-0.04, 1), fixed(-0.0, 0), fixed(-0.4, 0)),
            ("0.0".into(), "0.0".into(), "0".into(), "0".into())
        );
        assert_eq!((decimal1(-0.0), integer(-0.0), fixed(-1.0, 1)), ("0.0".into(), "0".into(), "-1.0".into()));
        assert_eq!(dollars(0.3889), "$0.389");
        assert_eq!(dollars(0.012345), "$0.0123");
    }

    #[test]
    fn context_labels() {
        assert_eq!(context_label(8192), "8K");
        assert_eq!(context_label(251 * 1024), "251K");
        assert_eq!(context_label(1536), "1.5K");
        assert_eq!(context_label(512), "512");
        assert_eq!(context_label(1000), "1,000");
        assert_eq!(context_slug(8192), "8k");
        assert_eq!(context_slug(1536), "1.5k");
        assert_eq!(context_slug(1000), "1000");
    }
}

#[cfg(test)]
mod brief_tests {
    use super::*;

    #[test]
    fn numbers_in_messages_and_downloads_stay_short() {
        assert_eq!(brief(1e308), "1e308");
        assert_eq!(brief(-5.0), "-5");
        assert_eq!(brief(156.7), "156.7");
        assert_eq!(brief(1e-300), "1e-300");
        assert_eq!(brief(f64::INFINITY), "");
        assert_eq!(pct2(-20.678), "-20.68");
        assert_eq!(pct2(f64::MAX), "1.80e308");
        assert_eq!(pct2(f64::NAN), "");
    }
}
