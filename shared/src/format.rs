//! How figures are written for people. The dashboard and the browser tests
//! both call these, so "what the page shows equals what the API says" is a
//! string comparison.

/// `0.62345` → `62.3%`; `None` → `—`.
pub fn percent(rate: Option<f64>) -> String {
    match rate {
        Some(r) => format!("{:.1}%", r * 100.0),
        None => "—".to_owned(),
    }
}

/// Wilson bounds → `[48.1%, 73.9%]`; `—` without a rate.
pub fn interval(low: Option<f64>, high: Option<f64>) -> String {
    match (low, high) {
        (Some(l), Some(h)) => format!("[{:.1}%, {:.1}%]", l * 100.0, h * 100.0),
        _ => "—".to_owned(),
    }
}

/// US dollars with cents below $1,000 and whole dollars above.
pub fn usd(value: Option<f64>) -> String {
    match value {
        Some(v) if v.abs() >= 1000.0 => format!("${}", thousands(v.round() as i64)),
        Some(v) => format!("${v:.2}"),
        None => "—".to_owned(),
    }
}

/// `12345` → `12,345`.
pub fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        out.push('-');
    }
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds as `42 s`, `12.5 min` or `3.2 h`.
pub fn duration_secs(secs: Option<f64>) -> String {
    match secs {
        None => "—".to_owned(),
        Some(s) if s < 120.0 => format!("{s:.0} s"),
        Some(s) if s < 7200.0 => format!("{:.1} min", s / 60.0),
        Some(s) => format!("{:.1} h", s / 3600.0),
    }
}

/// Seconds as minutes whatever their size (`0.4 min`, `12 min`), for a page
/// that gives wall time in one unit (the Cost & time page and its charts).
pub fn minutes(secs: Option<f64>) -> String {
    match secs.map(|s| s / 60.0) {
        None => "—".to_owned(),
        Some(m) if m < 10.0 => format!("{m:.1} min"),
        Some(m) => format!("{m:.0} min"),
    }
}

/// Hours as minutes below one (`14 min`), `5.5 h` below two days, else
/// days: `3.2 d`.
pub fn hours(h: Option<f64>) -> String {
    match h {
        None => "—".to_owned(),
        Some(h) if h * 60.0 < 0.5 => "under 1 min".to_owned(),
        Some(h) if h < 1.0 => format!("{:.0} min", h * 60.0),
        Some(h) if h < 48.0 => format!("{h:.1} h"),
        Some(h) => format!("{:.1} d", h / 24.0),
    }
}

/// The detail under "Mean cost of a success" (the Overview's and the Cost
/// page's): what it is over, or why it is unknown (`mean` is none when no
/// success has a cost; a known zero has no all-in ratio).
pub fn success_cost_detail(counting: u64, mean: Option<f64>, ratio: Option<f64>) -> String {
    match (counting, mean, ratio) {
        (0, ..) => "no successful attempt yet".into(),
        (n, None, _) => format!("unknown: {n} successes, none with a cost"),
        (n, Some(_), Some(r)) => format!("{n} successes alone; all-in is {r:.1}× this"),
        (n, Some(_), None) => format!("{n} successes alone, at no recorded cost"),
    }
}

/// The detail under "Cost per reproduction" (the Overview's and the Cost
/// page's): all spend over the reproductions, and the attempts left out.
pub fn spend_detail(total_usd: f64, attempts: u64, reproduced: u64, without_cost: u64) -> String {
    let left_out = match without_cost {
        0 => String::new(),
        n => format!(" · {n} attempts without a cost left out"),
    };
    format!(
        "all spend {} (failed attempts too) over {reproduced} reproduced{left_out}",
        spend(total_usd, attempts, without_cost)
    )
}

/// A spend of `attempts`, `without_cost` of them with no cost: "unknown"
/// when none has one, never $0.00.
pub fn spend(total_usd: f64, attempts: u64, without_cost: u64) -> String {
    if attempts > 0 && without_cost >= attempts { "unknown".to_owned() } else { usd(Some(total_usd)) }
}

/// ` · unknown for N without times`, when some of the `reproduced` reports
/// have no time to reproduction (imported undated).
pub fn unknown_times(n: u64, reproduced: u64) -> String {
    match reproduced.saturating_sub(n) {
        0 => String::new(),
        m => format!(" · unknown for {m} without times"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(percent(Some(0.62345)), "62.3%");
        assert_eq!(percent(None), "—");
        assert_eq!(interval(Some(0.481), Some(0.7391)), "[48.1%, 73.9%]");
        assert_eq!(usd(Some(2.5)), "$2.50");
        assert_eq!(usd(Some(12345.6)), "$12,346");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(-1000), "-1,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(duration_secs(Some(90.0)), "90 s");
        assert_eq!(duration_secs(Some(750.0)), "12.5 min");
        assert_eq!(minutes(Some(24.0)), "0.4 min");
        assert_eq!(minutes(Some(750.0)), "12 min");
        assert_eq!(minutes(None), "—");
        assert_eq!(hours(Some(5.54)), "5.5 h");
        assert_eq!(hours(Some(72.0)), "3.0 d");
        assert_eq!(hours(None), "—");
    }

    #[test]
    fn unknown_costs_and_times_are_said() {
        assert_eq!(success_cost_detail(0, None, None), "no successful attempt yet");
        assert_eq!(success_cost_detail(148, None, None), "unknown: 148 successes, none with a cost");
        assert!(success_cost_detail(3, Some(0.5), Some(2.0)).starts_with("3 successes alone; all-in"));
        assert_eq!(success_cost_detail(14, Some(0.0), None), "14 successes alone, at no recorded cost");
        assert_eq!(hours(Some(0.25)), "15 min");
        assert_eq!(hours(Some(0.001)), "under 1 min");
        assert_eq!(spend(0.0, 3, 3), "unknown");
        assert_eq!(spend(0.0, 0, 0), "$0.00");
        assert_eq!(spend(1.5, 3, 1), "$1.50");
        assert!(spend_detail(0.0, 148, 148, 148).starts_with("all spend unknown"));
        assert_eq!(unknown_times(5, 5), "");
        assert_eq!(unknown_times(0, 148), " · unknown for 148 without times");
    }
}
