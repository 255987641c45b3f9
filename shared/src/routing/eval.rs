//! Measuring the rule against labelled truth: a confusion matrix with
//! precision and recall per class.

use std::collections::BTreeMap;

/// Counts of (truth, decision) pairs over named classes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Confusion {
    classes: Vec<String>,
    counts: BTreeMap<(String, String), u64>,
}

/// Precision and recall of one class; `None` where the denominator is 0.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassScore {
    pub class: String,
    pub truth: u64,
    pub decided: u64,
    pub correct: u64,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
}

impl Confusion {
    /// A matrix over `classes`, in the order given (rows and columns).
    pub fn new(classes: &[&str]) -> Self {
        Self { classes: classes.iter().map(|c| (*c).to_owned()).collect(), counts: BTreeMap::new() }
    }

    pub fn add(&mut self, truth: &str, decided: &str) {
        for c in [truth, decided] {
            if !self.classes.iter().any(|k| k == c) {
                self.classes.push(c.to_owned());
            }
        }
        *self.counts.entry((truth.to_owned(), decided.to_owned())).or_default() += 1;
    }

    pub fn count(&self, truth: &str, decided: &str) -> u64 {
        self.counts.get(&(truth.to_owned(), decided.to_owned())).copied().unwrap_or(0)
    }

    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    pub fn score(&self, class: &str) -> ClassScore {
        let truth: u64 = self.classes.iter().map(|d| self.count(class, d)).sum();
        let decided: u64 = self.classes.iter().map(|t| self.count(t, class)).sum();
        let correct = self.count(class, class);
        let ratio = |n: u64, d: u64| (d > 0).then(|| n as f64 / d as f64);
        ClassScore {
            class: class.to_owned(),
            truth,
            decided,
            correct,
            precision: ratio(correct, decided),
            recall: ratio(correct, truth),
        }
    }

    /// The matrix as a text table: truth down, decision across.
    pub fn table(&self) -> String {
        let width = self.classes.iter().map(String::len).max().unwrap_or(0).max("truth \\ decided".len());
        let mut out = format!("{:<width$}", "truth \\ decided");
        for c in &self.classes {
            out.push_str(&format!("  {c:>w$}", w = c.len().max(5)));
        }
        out.push('\n');
        for t in &self.classes {
            out.push_str(&format!("{t:<width$}"));
            for d in &self.classes {
                out.push_str(&format!("  {:>w$}", self.count(t, d), w = d.len().max(5)));
            }
            out.push('\n');
        }
        out
    }
}

/// The Wilson score interval of `k` successes in `n` trials at 95%
/// (z = 1.96): `None` when `n` is 0.
pub fn wilson(k: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (k, n, z) = (k as f64, n as f64, 1.96_f64);
    let p = k / n;
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt()) / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_intervals_match_the_textbook() {
        // 8 of 10: 0.490 to 0.943 (Wilson, 95%).
        let (lo, hi) = wilson(8, 10).unwrap();
        assert!((lo - 0.490).abs() < 0.001 && (hi - 0.943).abs() < 0.001, "{lo} {hi}");
        let (lo, hi) = wilson(0, 20).unwrap();
        assert!(lo == 0.0 && (hi - 0.161).abs() < 0.001, "{hi}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn precision_and_recall_per_class() {
        let mut c = Confusion::new(&["harness", "other"]);
        for (t, d, n) in
            [("harness", "harness", 8), ("harness", "other", 2), ("other", "harness", 2), ("other", "other", 88)]
        {
            for _ in 0..n {
                c.add(t, d);
            }
        }
        let h = c.score("harness");
        assert_eq!((h.truth, h.decided, h.correct), (10, 10, 8));
        assert_eq!(h.precision, Some(0.8));
        assert_eq!(h.recall, Some(0.8));
        assert_eq!(c.total(), 100);
        let t = c.table();
        assert!(t.lines().nth(1).unwrap().ends_with("8      2"), "{t}");
        assert_eq!(Confusion::new(&["a"]).score("a").precision, None);
    }
}
