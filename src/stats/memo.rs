//! Remembered answers of the pure functions a build asks most often with the same
//! arguments (a t quantile for n - 1 repetitions, the ranks of a percentile's interval for n
//! requests): each answer costs an incomplete beta function or a walk of a binomial's
//! distribution, and a build of 10,000 runs asks a few hundred distinct questions millions
//! of times. The answer is the function's own, so figures are unchanged to the bit.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

/// The most answers a thread keeps per function; past it the memory starts afresh (the
/// arguments of Welch's test are real numbers and need not repeat).
const MAX_ENTRIES: usize = 1 << 16;

/// A per-thread table of answers of one function (no lock between rayon's threads).
pub(crate) struct Memo<K, V>(RefCell<HashMap<K, V>>);

impl<K: Eq + Hash, V: Copy> Memo<K, V> {
    pub(crate) fn new() -> Self {
        Memo(RefCell::new(HashMap::new()))
    }

    /// The remembered answer for `key`, or `compute`'s, then remembered.
    pub(crate) fn get_or(&self, key: K, compute: impl FnOnce() -> V) -> V {
        if let Some(v) = self.0.borrow().get(&key) {
            return *v;
        }
        let v = compute();
        let mut table = self.0.borrow_mut();
        if table.len() >= MAX_ENTRIES {
            table.clear();
        }
        table.insert(key, v);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_computed_once_and_the_table_stays_bounded() {
        let memo = Memo::new();
        let mut calls = 0;
        assert_eq!(
            memo.get_or(3u64, || {
                calls += 1;
                9
            }),
            9
        );
        assert_eq!(
            memo.get_or(3u64, || {
                calls += 1;
                0
            }),
            9
        );
        assert_eq!(calls, 1);
        for k in 0..(MAX_ENTRIES as u64 + 10) {
            memo.get_or(k, || k);
        }
        assert!(memo.0.borrow().len() <= MAX_ENTRIES);
    }
}
