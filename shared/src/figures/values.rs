//! Distributions as counts (issue 16): an attempt's cost or wall time falls
//! in a bin a sixteenth of a doubling wide, and a distribution is read from
//! the bins' counts and sums. Storage keeps the bins summed per group as
//! data arrives; the exact path bins every value the same way, so both
//! answer through [`distribution_of`] and agree by construction.
//!
//! What the bins round ([`VALUES_NOTE`]): the count and the mean are exact;
//! the median, p90, maximum, the CDF's points and the histogram's bars read
//! each value as its bin's geometric middle, within 2.2% of the value (half
//! a hundredth of a cent, or 0.05 s, below those; zero is kept apart).

use std::collections::BTreeMap;

use crate::api::figures::{Bin, Distribution, Metric};

/// What the bins round, for the pages that show distributions.
pub const VALUES_NOTE: &str = "Counts and means are exact; medians, p90, maxima and bars read each value \
     from a bin a sixteenth of a doubling wide (within 2.2%; half a hundredth of a cent or 0.05 s below those).";

/// Bins to a doubling.
const PER_DOUBLING: f64 = 16.0;

/// The last bin: values from about 2^39 floors on.
pub const VALUE_BINS: i64 = 640;

/// Where a metric's doubling bins start: a hundredth of a cent, a tenth of
/// a second. Bin 1 holds what is above zero and below it; bin 0 zero.
pub fn value_floor(metric: Metric) -> f64 {
    match metric {
        Metric::CostUsd => 0.0001,
        Metric::WallSeconds => 0.1,
    }
}

/// The bin of `v`: 0 for zero (or less), 1 under the floor, then a
/// sixteenth of a doubling each.
pub fn value_bin(metric: Metric, v: f64) -> i64 {
    let floor = value_floor(metric);
    if v.is_nan() || v <= 0.0 {
        return 0;
    }
    if v < floor {
        return 1;
    }
    if !v.is_finite() {
        return VALUE_BINS;
    }
    (2 + ((v / floor).log2() * PER_DOUBLING).floor() as i64).clamp(2, VALUE_BINS)
}

/// The value a bin of [`value_bin`] reads as: its geometric middle (zero
/// for bin 0, half the floor for bin 1).
pub fn bin_value(metric: Metric, bin: i64) -> f64 {
    let floor = value_floor(metric);
    match bin {
        ..=0 => 0.0,
        1 => floor / 2.0,
        b => floor * 2f64.powf((b as f64 - 1.5) / PER_DOUBLING),
    }
}

/// One group's values as bins: per bin, how many and their sum.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValueBins(pub BTreeMap<i64, (u64, f64)>);

impl ValueBins {
    /// Adds a value.
    pub fn add(&mut self, metric: Metric, v: f64) {
        if v.is_finite() {
            let b = self.0.entry(value_bin(metric, v)).or_default();
            b.0 += 1;
            b.1 += v;
        }
    }

    pub fn n(&self) -> u64 {
        self.0.values().map(|(n, _)| n).sum()
    }

    /// The greatest value, as its bin reads.
    fn max(&self, metric: Metric) -> Option<f64> {
        self.0.iter().rev().find(|(_, (n, _))| *n > 0).map(|(b, _)| bin_value(metric, *b))
    }
}

/// `bins` equal bins from 0 to the greatest value (as its bin reads) over
/// every group, as [`super::bin_edges`] draws them for values.
pub fn bin_edges_of(metric: Metric, groups: &[&ValueBins], bins: usize) -> Vec<f64> {
    let hi = groups.iter().filter_map(|g| g.max(metric)).fold(0.0_f64, f64::max);
    let bins = bins.max(1);
    if hi <= 0.0 {
        return vec![0.0, 1.0];
    }
    let width = hi / bins as f64;
    (0..=bins).map(|i| if i == bins { hi } else { width * i as f64 }).collect()
}

/// One group's distribution over shared bin `edges`, read from its bins.
pub fn distribution_of(key: String, metric: Metric, values: &ValueBins, edges: &[f64]) -> Distribution {
    let read: Vec<(f64, u64)> =
        values.0.iter().filter(|(_, (n, _))| *n > 0).map(|(b, (n, _))| (bin_value(metric, *b), *n)).collect();
    let sorted = super::flows::Weighted(read.clone());
    let n = sorted.n();
    let sum: f64 = values.0.values().map(|(_, s)| s).sum();
    let mut histogram: Vec<Bin> = edges.windows(2).map(|w| Bin { low: w[0], high: w[1], count: 0 }).collect();
    let last = histogram.len().saturating_sub(1);
    for (v, k) in &read {
        let i = histogram.iter().position(|b| *v < b.high).unwrap_or(last);
        if let Some(b) = histogram.get_mut(i) {
            b.count += k;
        }
    }
    Distribution {
        key,
        n,
        mean: super::ratio(sum, n as f64),
        median: sorted.median(),
        p90: sorted.quantile(0.9),
        max: read.last().map(|(v, _)| *v),
        histogram,
        cdf: cdf_of(&read, n),
    }
}

/// The CDF at up to 101 points, as [`super::cdf`] takes them from a sorted
/// list, from values with their counts (ascending).
fn cdf_of(read: &[(f64, u64)], n: u64) -> Vec<(f64, f64)> {
    if n == 0 {
        return Vec::new();
    }
    // Values at or below each bin's, cumulatively.
    let mut upto = Vec::with_capacity(read.len());
    let mut seen = 0;
    for (_, k) in read {
        seen += k;
        upto.push(seen);
    }
    let step = n.div_ceil(100).max(1);
    let mut idx: Vec<u64> = (step - 1..n).step_by(step as usize).collect();
    if idx.last() != Some(&(n - 1)) {
        idx.push(n - 1);
    }
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(idx.len());
    for i in idx {
        let at = upto.partition_point(|u| *u <= i);
        let Some((v, _)) = read.get(at) else { continue };
        let point = (*v, upto[at] as f64 / n as f64);
        match out.last_mut() {
            Some(last) if last.0 == *v => *last = point,
            _ => out.push(point),
        }
    }
    out
}
