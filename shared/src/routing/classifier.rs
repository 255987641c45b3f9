//! A small trained classifier for the harness-and-plumbing rule: logistic
//! regression over the words of the title and prose, and the labels.
//!
//! It learns from labelled examples (the ones failpass ships, a project's
//! corrected routes, a truth file's training split) in milliseconds, and
//! explains a decision by the words that pushed it most.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::sections::{Boilerplate, Reading, read};
use super::text::words;

/// One labelled report: is it about harness and plumbing?
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub harness: bool,
}

/// What the classifier reads of a report: words of the title and of the
/// prose (code and tracebacks are read by the explicit rule), each label
/// whole and its words.
pub fn features(title: &str, body: &str, labels: &[String]) -> BTreeSet<String> {
    features_of(title, &read(body, &Boilerplate::default()), labels)
}

/// [`features`] of a body already read: the problem's prose only (not its
/// headings, environment or form answers).
pub fn features_of(title: &str, reading: &Reading, labels: &[String]) -> BTreeSet<String> {
    let mut set: BTreeSet<String> = words(title).collect();
    set.extend(words(&reading.prose()));
    for label in labels {
        let l = label.trim().to_lowercase();
        set.extend(words(&l).map(|w| format!("label~{w}")));
        set.insert(format!("label:{l}"));
    }
    set
}

/// Logistic regression weights per feature.
#[derive(Debug, Clone, PartialEq)]
pub struct Classifier {
    bias: f64,
    weights: HashMap<String, f64>,
    /// Harness and other examples it was trained on.
    pub trained_on: (usize, usize),
}

/// One feature's push towards (positive) or away from harness.
#[derive(Debug, Clone, PartialEq)]
pub struct Contribution {
    pub feature: String,
    pub weight: f64,
}

/// A prediction: the probability of harness and the features that weighed most.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub p_harness: f64,
    pub top: Vec<Contribution>,
}

const EPOCHS: usize = 300;
const LEARNING_RATE: f64 = 0.5;
const L2: f64 = 0.002;
/// A word must occur in at least this many training examples to be learned.
const MIN_EXAMPLES_PER_FEATURE: usize = 2;

impl Classifier {
    /// Trains on `examples`; `None` without at least one example of each class.
    ///
    /// With `prior`, the learned odds are moved from the examples' share of
    /// harness to that share: shipped examples are balanced on purpose, while
    /// a tracker holds far fewer harness reports than others.
    pub fn train(examples: &[Example], prior: Option<f64>) -> Option<Self> {
        let pos = examples.iter().filter(|e| e.harness).count();
        let neg = examples.len() - pos;
        if pos == 0 || neg == 0 {
            return None;
        }
        let docs: Vec<BTreeSet<String>> = examples.iter().map(|e| features(&e.title, &e.body, &e.labels)).collect();
        let mut df: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &docs {
            for f in d {
                *df.entry(f.as_str()).or_default() += 1;
            }
        }
        let vocab: Vec<&str> = df.iter().filter(|(_, n)| **n >= MIN_EXAMPLES_PER_FEATURE).map(|(f, _)| *f).collect();
        let index: HashMap<&str, usize> = vocab.iter().enumerate().map(|(i, f)| (*f, i)).collect();
        let rows: Vec<Vec<usize>> =
            docs.iter().map(|d| d.iter().filter_map(|f| index.get(f.as_str()).copied()).collect()).collect();
        let ys: Vec<f64> = examples.iter().map(|e| if e.harness { 1.0 } else { 0.0 }).collect();

        // Full-batch gradient descent: deterministic, and fast at this size.
        let n = examples.len() as f64;
        let mut w = vec![0.0; vocab.len()];
        let mut b = (pos as f64 / neg as f64).ln();
        let mut grad = vec![0.0; vocab.len()];
        for _ in 0..EPOCHS {
            grad.iter_mut().for_each(|g| *g = 0.0);
            let mut gb = 0.0;
            for (row, y) in rows.iter().zip(&ys) {
                let z = b + row.iter().map(|&i| w[i]).sum::<f64>();
                let err = sigmoid(z) - y;
                gb += err;
                for &i in row {
                    grad[i] += err;
                }
            }
            b -= LEARNING_RATE * gb / n;
            for (wi, gi) in w.iter_mut().zip(&grad) {
                *wi -= LEARNING_RATE * (gi / n + L2 * *wi);
            }
        }
        if let Some(p) = prior.filter(|p| *p > 0.0 && *p < 1.0) {
            b += logit(p) - logit(pos as f64 / examples.len() as f64);
        }
        let weights = vocab.iter().zip(w).map(|(f, w)| ((*f).to_owned(), w)).collect();
        Some(Self { bias: b, weights, trained_on: (pos, neg) })
    }

    pub fn predict(&self, title: &str, body: &str, labels: &[String]) -> Prediction {
        self.predict_reading(title, &read(body, &Boilerplate::default()), labels)
    }

    /// [`Self::predict`] of a body already read.
    pub fn predict_reading(&self, title: &str, reading: &Reading, labels: &[String]) -> Prediction {
        let feats = features_of(title, reading, labels);
        let mut top: Vec<Contribution> = feats
            .iter()
            .filter_map(|f| self.weights.get(f).map(|w| Contribution { feature: f.clone(), weight: *w }))
            .collect();
        let z = self.bias + top.iter().map(|c| c.weight).sum::<f64>();
        let p_harness = sigmoid(z);
        // The features that pushed towards the decision, strongest first.
        let towards = if p_harness >= 0.5 { 1.0 } else { -1.0 };
        top.retain(|c| c.weight * towards > 0.05);
        top.sort_by(|a, b| (b.weight * towards).total_cmp(&(a.weight * towards)).then(a.feature.cmp(&b.feature)));
        top.truncate(3);
        Prediction { p_harness, top }
    }
}

fn logit(p: f64) -> f64 {
    (p / (1.0 - p)).ln()
}

fn sigmoid(z: f64) -> f64 {
    1.0 / (1.0 + (-z).exp())
}

impl Prediction {
    /// "p(harness) 0.83: "cmake" +1.9, label "module: build" +1.2".
    pub fn explain(&self) -> String {
        let evidence: Vec<String> = self
            .top
            .iter()
            .map(|c| {
                let name = match c.feature.split_once(':') {
                    Some(("label", l)) => format!("label \"{l}\""),
                    _ => match c.feature.split_once('~') {
                        Some(("label", w)) => format!("label word \"{w}\""),
                        _ => format!("\"{}\"", c.feature),
                    },
                };
                format!("{name} {:+.1}", c.weight)
            })
            .collect();
        let p = (self.p_harness * 100.0).round() / 100.0;
        if evidence.is_empty() {
            format!("p(harness) {p:.2}: no learned word weighs")
        } else {
            format!("p(harness) {p:.2}: {}", evidence.join(", "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(title: &str, harness: bool) -> Example {
        Example { title: title.into(), body: String::new(), labels: vec![], harness }
    }

    #[test]
    fn learns_words_and_explains_by_them() {
        let mut data = Vec::new();
        for t in ["cmake fails on windows", "windows build broken", "cmake cannot find blas", "linker error windows"] {
            data.push(ex(t, true));
        }
        for t in ["softmax returns nan", "wrong gradient of softmax", "nan in matmul backward", "matmul wrong shape"] {
            data.push(ex(t, false));
        }
        let c = Classifier::train(&data, None).unwrap();
        assert_eq!(c.trained_on, (4, 4));
        let p = c.predict("cmake error on windows", "", &[]);
        assert!(p.p_harness > 0.7, "{p:?}");
        assert!(p.explain().contains("\"windows\""), "{}", p.explain());
        let q = c.predict("softmax gives nan", "", &[]);
        assert!(q.p_harness < 0.3, "{q:?}");
        // Words seen once are not learned.
        assert!(c.predict("linker", "", &[]).top.is_empty());
    }

    #[test]
    fn one_class_is_not_enough() {
        assert!(Classifier::train(&[ex("a b", true), ex("c d", true)], None).is_none());
        assert!(Classifier::train(&[], None).is_none());
    }

    #[test]
    fn a_prior_moves_the_odds_of_unknown_words() {
        let data =
            [ex("build fails", true), ex("build broken", true), ex("nan result", false), ex("nan output", false)];
        let even = Classifier::train(&data, None).unwrap();
        let rare = Classifier::train(&data, Some(0.2)).unwrap();
        let p_even = even.predict("something new", "", &[]).p_harness;
        let p_rare = rare.predict("something new", "", &[]).p_harness;
        assert!((p_even - 0.5).abs() < 0.01, "{p_even}");
        assert!((p_rare - 0.2).abs() < 0.01, "{p_rare}");
    }

    #[test]
    fn labels_are_features_whole_and_by_word() {
        let f = features("t", "", &["Module: Build".to_owned()]);
        assert!(f.contains("label:module: build") && f.contains("label~build"), "{f:?}");
    }
}
