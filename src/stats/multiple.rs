//! Many tests at once: the Benjamini-Hochberg procedure.

/// Which of the tests are significant when their `p` values are judged together at `alpha`:
/// the Benjamini-Hochberg step-up procedure over the tests that have a p value (the others
/// are never significant). With m p values sorted, the k smallest are significant for the
/// largest k whose p is at most k/m x alpha. It keeps the expected share of false calls
/// among the calls at alpha, and when nothing changed the chance of any call at alpha.
pub fn benjamini_hochberg(p_values: &[Option<f64>], alpha: f64) -> Vec<bool> {
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| p_values[i].is_some()).collect();
    let p = |i: usize| p_values[i].unwrap_or(1.0);
    order.sort_by(|&x, &y| p(x).total_cmp(&p(y)).then(x.cmp(&y)));
    let m = order.len();
    let passing = order.iter().enumerate().rev().find(|(rank, &i)| p(i) <= (rank + 1) as f64 / m as f64 * alpha);
    let mut significant = vec![false; p_values.len()];
    if let Some((k, _)) = passing {
        for &i in &order[..=k] {
            significant[i] = true;
        }
    }
    significant
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kth_smallest_must_be_below_k_over_m_alpha() {
        assert_eq!(benjamini_hochberg(&[Some(0.03), Some(0.04), Some(0.06)], 0.05), [false; 3]);
        assert_eq!(benjamini_hochberg(&[Some(0.02), Some(0.03), Some(0.06)], 0.05), [true, true, false]);
        // Step-up: the largest passing rank carries the smaller ones with it.
        assert_eq!(benjamini_hochberg(&[Some(0.04), Some(0.02), Some(0.045)], 0.05), [true; 3]);
        assert_eq!(benjamini_hochberg(&[None, Some(0.001)], 0.05), [false, true]);
    }
}
