//! The dashboard's charts, drawn with plotters into SVG strings on the
//! server (`GET /api/v1/charts/{name}`): the dashboard inlines them, and a
//! status page or an issue comment can link them.

use failpass_shared::api::figures::FigureRow;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

const BAR: RGBColor = RGBColor(0x2f, 0x6f, 0xb3);
const INK: RGBColor = RGBColor(0x22, 0x26, 0x2b);

/// Reproduction rate per group as bars with Wilson 95% whiskers; each bar is
/// labelled with its rate and sample size, so colour carries nothing alone.
pub fn rate_bars(title: &str, x_desc: &str, rows: &[FigureRow], width: u32, height: u32) -> String {
    // Side by side while each bar has room for its label, else one bar per line.
    let longest = rows.iter().map(|r| short_key(&r.key).chars().count()).max().unwrap_or(0);
    let across = rows.len() <= 1 || width as usize / rows.len() >= (longest * 7 + 16).max(110);
    let height = if across { height } else { (rows.len() as u32 * 34 + 110).max(height.min(260)) };
    svg(width, height, |root| {
        if across {
            draw_rate_bars(root, title, x_desc, rows)
        } else {
            draw_rate_rows(root, title, x_desc, rows, width)
        }
    })
}

fn draw_rate_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    rows: &[FigureRow],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // A segmented range `0..k` has k + 1 segments.
    let last = (rows.len() as i32 - 1).max(0);
    let mut chart = frame(root, title, 52).build_cartesian_2d((0..last).into_segmented(), percent_axis(134.0))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .y_desc("Reproduction rate (%)")
        .x_desc(x_desc)
        // Headroom above 100% holds the bar labels (up to ~110) and, above them,
        // the legend; the axis ticks stop at 100%.
        .y_label_formatter(&|v| format!("{v:.0}%"))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows.get(*i as usize).map(|r| short_key(&r.key)).unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(font(12))
        .axis_desc_style(font(12))
        .draw()?;

    chart.draw_series(
        Histogram::vertical(&chart)
            .style(BAR.mix(0.85).filled())
            .margin(18)
            .data(rows.iter().enumerate().map(|(i, r)| (i as i32, r.rate.unwrap_or(0.0) * 100.0))),
    )?;
    chart
        .draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
            let (lo, hi, rate) = (r.rate_low?, r.rate_high?, r.rate?);
            Some(ErrorBar::new_vertical(
                SegmentValue::CenterOf(i as i32),
                lo * 100.0,
                rate * 100.0,
                hi * 100.0,
                INK.stroke_width(2),
                10,
            ))
        }))?
        .label("Wilson 95% interval")
        .legend(|(x, y)| PathElement::new(vec![(x, y - 5), (x, y + 5)], INK.stroke_width(2)));
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        let y = r.rate_high.unwrap_or(0.0) * 100.0 + 3.0;
        Text::new(
            format!("{} (n={})", failpass_shared::format::percent(r.rate), r.reports_graded),
            (SegmentValue::CenterOf(i as i32), y),
            font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
    Ok(())
}

/// The rate chart turned on its side: one labelled bar per line, for many
/// groups or a narrow screen.
fn draw_rate_rows<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    rows: &[FigureRow],
    width: u32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let last = (rows.len() as i32 - 1).max(0);
    let label_area = (width as f64 * 0.4).clamp(90.0, 240.0) as u32;
    let chars = (label_area / 7).max(8) as usize;
    let mut chart =
        frame(root, title, label_area).build_cartesian_2d(percent_axis(150.0), (0..last).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(TRANSPARENT)
        .x_desc("Reproduction rate (%)")
        .y_desc(y_desc)
        .x_label_formatter(&|v| format!("{v:.0}%"))
        .y_label_formatter(&|v| match v {
            // The first row on top, as in the table below.
            SegmentValue::CenterOf(i) => {
                rows.get((last - *i) as usize).map(|r| cut(&r.key.replace('_', " "), chars)).unwrap_or_default()
            }
            _ => String::new(),
        })
        .label_style(font(12))
        .axis_desc_style(font(12))
        .draw()?;
    chart.draw_series(
        Histogram::horizontal(&chart)
            .style(BAR.mix(0.85).filled())
            .margin(6)
            .data(rows.iter().enumerate().map(|(i, r)| (last - i as i32, r.rate.unwrap_or(0.0) * 100.0))),
    )?;
    chart.draw_series(rows.iter().enumerate().filter_map(|(i, r)| {
        let (lo, hi, rate) = (r.rate_low?, r.rate_high?, r.rate?);
        Some(ErrorBar::new_horizontal(
            SegmentValue::CenterOf(last - i as i32),
            lo * 100.0,
            rate * 100.0,
            hi * 100.0,
            INK.stroke_width(2),
            8,
        ))
    }))?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        Text::new(
            format!("{} n={}", failpass_shared::format::percent(r.rate), r.reports_graded),
            (r.rate_high.unwrap_or(0.0) * 100.0 + 2.0, SegmentValue::CenterOf(last - i as i32)),
            font(12).pos(Pos::new(HPos::Left, VPos::Center)),
        )
    }))?;
    Ok(())
}

/// Counts per category as labelled bars (each bar carries its number).
pub fn count_bars(title: &str, x_desc: &str, y_desc: &str, rows: &[(String, i64)], width: u32, height: u32) -> String {
    svg(width, height, |root| draw_count_bars(root, title, x_desc, y_desc, rows, width))
}

fn draw_count_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    rows: &[(String, i64)],
    width: u32,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // Each label gets its bar's width (about 7 px a character at 12 px);
    // a longer one is cut in the middle rather than run into its neighbour.
    let chars = ((width.saturating_sub(70) as usize / rows.len().max(1)) / 7).max(4);
    let last = (rows.len() as i32 - 1).max(0);
    let top = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1) as f64 * 1.18;
    let mut chart = frame(root, title, 52).build_cartesian_2d((0..last).into_segmented(), 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .y_desc(y_desc)
        .x_desc(x_desc)
        .y_label_formatter(&|v| whole(*v))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => {
                rows.get(*i as usize).map(|r| cut(&r.0.replace('_', " "), chars)).unwrap_or_default()
            }
            _ => String::new(),
        })
        .label_style(font(12))
        .axis_desc_style(font(12))
        .draw()?;
    chart.draw_series(
        Histogram::vertical(&chart)
            .style(BAR.mix(0.85).filled())
            .margin(18)
            .data(rows.iter().enumerate().map(|(i, r)| (i as i32, r.1 as f64))),
    )?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        Text::new(
            r.1.to_string(),
            (SegmentValue::CenterOf(i as i32), r.1 as f64 + top * 0.02),
            font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    Ok(())
}

/// The frame every chart shares: its title, margins and room for the axes'
/// labels (`y_label_area` pixels for the y axis's).
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    title: &'b str,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder.caption(title, font(16)).margin(12).x_label_area_size(40).y_label_area_size(y_label_area);
    builder
}

/// The charts' legend box, at `position`: a named entry per series.
fn draw_legend<'a, DB: DrawingBackend + 'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
    position: SeriesLabelPosition,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(INK.mix(0.3))
        .position(position)
        .label_font(font(12))
        .draw()
}

/// The charts' one typeface, in ink, at `size` pixels. Plotters writes an
/// SVG's `font-size` as the size asked for over 1.24 (its points to pixels),
/// so asking 12 drew 9.7 px text: the size is scaled back up here.
fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", f64::from(size) * 1.24).into_font().color(&INK)
}

/// A group key as an axis label: underscores as spaces, long keys cut.
fn short_key(key: &str) -> String {
    cut(&key.replace('_', " "), 22)
}

/// `text` in at most `max` characters; the cut goes in the middle, so a
/// crossed key keeps its last part ("gpt-4o-20…· after cutoff").
fn cut(text: &str, max: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return text.to_owned();
    }
    let tail = (max / 2).min(chars.len());
    let head = max.saturating_sub(tail + 1);
    format!("{}…{}", chars[..head].iter().collect::<String>(), chars[chars.len() - tail..].iter().collect::<String>())
}

/// A count axis's tick: whole numbers only, so small counts do not repeat.
pub fn whole(v: f64) -> String {
    if (v - v.round()).abs() < 1e-9 { format!("{v:.0}") } else { String::new() }
}

/// A 0..`top` percent axis whose ticks stop at 100% (the room above holds
/// labels and the legend, and no unlabelled tick).
fn percent_axis(top: f64) -> Ticked {
    Ticked::new(0.0..top, &[0.0, 20.0, 40.0, 60.0, 80.0, 100.0])
}

/// A linear axis with its ticks where given (plotters' own `WithKeyPoints`
/// does not take a label formatter over `f64`).
struct Ticked {
    range: plotters::coord::types::RangedCoordf64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(range: std::ops::Range<f64>, ticks: &[f64]) -> Self {
        Self { range: range.into(), ticks: ticks.to_vec() }
    }
}

impl plotters::coord::ranged1d::Ranged for Ticked {
    type ValueType = f64;
    type FormatOption = plotters::coord::ranged1d::DefaultFormatting;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.range.map(value, limit)
    }

    fn key_points<H: plotters::coord::ranged1d::KeyPointHint>(&self, _hint: H) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.range()
    }
}

/// Whether `key` is a time key: a week's Monday (`YYYY-MM-DD`) or a month (`YYYY-MM`).
fn is_time_key(key: &str) -> bool {
    let b = key.as_bytes();
    let digits = |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    (b.len() == 7 || b.len() == 10)
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && (b.len() == 7 || (b[7] == b'-' && digits(8..10)))
}

/// A time key as an axis label: with its year on the first label shown
/// (`prev` is the one shown before) and wherever the year changes, so a
/// 2023 week never passes for a 2026 one. Months read `Jan 2026`, `Feb`.
fn time_label(key: &str, prev: Option<&str>) -> String {
    let new_year = prev.is_none_or(|p| p.get(..4) != key.get(..4));
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    match key.len() {
        7 => {
            let m = key[5..7].parse::<usize>().ok().and_then(|m| MONTHS.get(m.wrapping_sub(1))).copied().unwrap_or("?");
            if new_year { format!("{m} {}", &key[..4]) } else { m.to_owned() }
        }
        _ if new_year => key.to_owned(),
        _ => key[5..].to_owned(),
    }
}

/// The labels an axis of `labels` shows at `width` pixels: one every so
/// many, so they never overlap (time keys take more room, with their year).
fn shown_labels(labels: &[String], width: u32) -> Vec<String> {
    let dated = !labels.is_empty() && labels.iter().all(|l| is_time_key(l));
    let px = if dated { 84 } else { 60 };
    let every = labels.len().div_ceil((width as usize / px).max(2)).max(1);
    labels
        .iter()
        .enumerate()
        .map(|(i, l)| match (i % every == 0, dated) {
            (false, _) => String::new(),
            (true, true) => time_label(l, i.checked_sub(every).map(|j| labels[j].as_str())),
            (true, false) => short_key(l),
        })
        .collect()
}

/// Draws into an SVG string; an error leaves an empty string (the page's
/// table still carries the numbers).
fn svg<F>(width: u32, height: u32, draw: F) -> String
where
    F: FnOnce(&DrawingArea<SVGBackend, plotters::coord::Shift>) -> Result<(), DrawingAreaErrorKind<std::io::Error>>,
{
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (width, height)).into_drawing_area();
        if draw(&root).is_err() {
            drop(root);
            return String::new();
        }
        let _ = root.present();
    }
    out
}

/// A chart with nothing to draw: its title, and in its place what is
/// missing (never axes whose ticks all read zero).
pub fn empty_chart(title: &str, why: &str, width: u32, height: u32) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let area = root.titled(title, font(16))?;
        let (w, h) = area.dim_in_pixel();
        let muted = INK.mix(0.7);
        let style = font(18).color(&muted).pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Text::new(why.to_owned(), (w as i32 / 2, h as i32 / 2), style))?;
        Ok(())
    })
}

/// Series styles that differ in fill as well as colour, so print and
/// colour-blind readers can tell them apart (the legend names each).
const SERIES: [RGBColor; 4] = [BAR, RGBColor(0xc0, 0x5a, 0x1a), RGBColor(0x4a, 0x8a, 0x3c), RGBColor(0x7b, 0x4f, 0x9d)];

fn series_style(i: usize) -> ShapeStyle {
    let c = SERIES[i % SERIES.len()];
    if i.is_multiple_of(2) { c.mix(0.85).filled() } else { c.stroke_width(2) }
}

/// Bars per label for each series side by side (a hollow bar for every
/// second series), with a legend. `fmt` writes the y axis's ticks.
// A chart is its titles, its data, its tick format and its size.
#[allow(clippy::too_many_arguments)]
pub fn grouped_bars(
    title: &str,
    x_desc: &str,
    y_desc: &str,
    labels: &[String],
    series: &[(&str, Vec<f64>)],
    fmt: &dyn Fn(f64) -> String,
    width: u32,
    height: u32,
) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let n = labels.len().max(1);
        let k = series.len().max(1);
        let top = series.iter().flat_map(|s| s.1.iter().copied()).fold(0.0_f64, f64::max).max(1e-9) * 1.45;
        let mut chart = frame(root, title, 60).build_cartesian_2d(0f64..n as f64, 0f64..top)?;
        // Labels spaced so they never overlap; dates carry their year.
        let shown = shown_labels(labels, width);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                let centred = ((x - 0.5) - i).abs() < 1e-6 && i >= 0.0;
                match shown.get(i as usize) {
                    Some(l) if centred => l.clone(),
                    _ => String::new(),
                }
            })
            .y_label_formatter(&|v| fmt(*v))
            .y_desc(y_desc)
            .x_desc(x_desc)
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        let slot = 0.8 / k as f64;
        for (si, (name, values)) in series.iter().enumerate() {
            let style = series_style(si);
            chart
                .draw_series(values.iter().enumerate().map(|(i, v)| {
                    let x0 = i as f64 + 0.1 + slot * si as f64;
                    Rectangle::new([(x0, 0.0), (x0 + slot * 0.9, *v)], style)
                }))?
                .label(*name)
                .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], style));
        }
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// A histogram of `(low, high, count)` bars over a value axis in `unit`.
pub fn histogram_chart(
    title: &str,
    x_desc: &str,
    bins: &[(f64, f64, u64)],
    money: bool,
    width: u32,
    height: u32,
) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let lo = bins.first().map_or(0.0, |b| b.0);
        let hi = bins.last().map_or(1.0, |b| b.1).max(lo + 1e-9);
        let top = bins.iter().map(|b| b.2).max().unwrap_or(1).max(1) as f64 * 1.2;
        // A little room either side, so the outer bars do not touch the axis ends.
        let pad = (hi - lo) * 0.03;
        let mut chart = frame(root, title, 52).build_cartesian_2d((lo - pad)..(hi + pad), 0f64..top)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(6)
            .x_label_formatter(&|v| if money { format!("${}", compact(*v)) } else { compact(*v) })
            .y_label_formatter(&|v| whole(*v))
            .y_desc("Attempts")
            .x_desc(x_desc)
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        chart.draw_series(
            bins.iter().map(|b| Rectangle::new([(b.0, 0.0), (b.1, b.2 as f64)], BAR.mix(0.85).filled())),
        )?;
        chart
            .draw_series(bins.iter().map(|b| Rectangle::new([(b.0, 0.0), (b.1, b.2 as f64)], WHITE.stroke_width(1))))?;
        Ok(())
    })
}

/// One CDF: its name, its style (an agent keeps its colour whatever the filter) and its points.
pub type CdfSeries = (String, usize, Vec<(f64, f64)>);

/// Empirical CDFs, one step line per `(name, style, points)`, each marked
/// with its style's colour and shape, both shown in the legend.
pub fn cdf_chart(title: &str, x_desc: &str, series: &[CdfSeries], money: bool, width: u32, height: u32) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let hi = series.iter().flat_map(|s| s.2.iter().map(|p| p.0)).fold(0.0_f64, f64::max).max(1e-9);
        let lo = series.iter().flat_map(|s| s.2.iter().map(|p| p.0)).fold(0.0_f64, f64::min);
        let shares = Ticked::new(0.0..1.05, &[0.0, 0.25, 0.5, 0.75, 1.0]);
        // The legend goes in a band under the chart, never over its lines.
        let (w, h) = root.dim_in_pixel();
        let names: Vec<&str> = series.iter().map(|s| s.0.as_str()).collect();
        let rows = legend_rows(&names, w);
        let band_h = rows.len() as u32 * 20 + 6;
        let (plot, band) = root.split_vertically(h.saturating_sub(band_h));
        let mut chart = frame(&plot, title, 52).build_cartesian_2d(lo..hi * 1.05, shares)?;
        chart
            .configure_mesh()
            .light_line_style(RGBColor(0xee, 0xee, 0xee))
            .x_labels(6)
            .x_label_formatter(&|v| if money { format!("${}", compact(*v)) } else { compact(*v) })
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .y_desc("Attempts at or below (%)")
            .x_desc(x_desc)
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        for (_, style, points) in series {
            // Colour and marker both follow the series' style index, so an
            // agent looks the same whatever the filter (and not by colour alone).
            let colour = SERIES[style % SERIES.len()];
            let mut steps = Vec::with_capacity(points.len() * 2 + 1);
            let mut prev = 0.0;
            for &(x, y) in points {
                steps.push((x, prev));
                steps.push((x, y));
                prev = y;
            }
            chart.draw_series(LineSeries::new(steps, colour.stroke_width(2)))?;
            let every = (points.len() / 6).max(1);
            for p in points.iter().step_by(every).copied() {
                draw_marker(chart.plotting_area(), *style, p)?;
            }
        }
        // The band: each series' line and marker, then its name, row by row.
        for (r, row) in rows.iter().enumerate() {
            let y = r as i32 * 20 + 12;
            for &(i, x) in row {
                let (style, colour) = (series[i].1, SERIES[series[i].1 % SERIES.len()]);
                band.draw(&PathElement::new(vec![(x, y), (x + 16, y)], colour.stroke_width(2)))?;
                draw_marker(&band, style, (x + 8, y))?;
                band.draw(&Text::new(
                    series[i].0.clone(),
                    (x + 22, y),
                    font(12).pos(Pos::new(HPos::Left, VPos::Center)),
                ))?;
            }
        }
        Ok(())
    })
}

/// Draws a series' marker at `at`: its colour and a shape of its own
/// (circle, triangle, cross), so colour is never the only difference.
fn draw_marker<DB, CT>(
    area: &DrawingArea<DB, CT>,
    style: usize,
    at: CT::From,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>>
where
    DB: DrawingBackend,
    CT: plotters::coord::CoordTranslate,
    CT::From: Clone,
{
    let colour = SERIES[style % SERIES.len()];
    match style % 3 {
        0 => area.draw(&Circle::new(at, 4, colour.filled())),
        1 => area.draw(&TriangleMarker::new(at, 5, colour.filled())),
        _ => area.draw(&Cross::new(at, 4, colour.stroke_width(2))),
    }
}

/// A legend's entries laid out in rows `width` pixels wide: per row, each
/// entry's index and left edge.
fn legend_rows(names: &[&str], width: u32) -> Vec<Vec<(usize, i32)>> {
    let mut rows: Vec<Vec<(usize, i32)>> = Vec::new();
    let mut x = 12;
    for (i, name) in names.iter().enumerate() {
        let w = 22 + name.chars().count() as i32 * 7 + 18;
        if rows.is_empty() || (x + w > width as i32 - 8 && x > 12) {
            rows.push(Vec::new());
            x = 12;
        }
        if let Some(row) = rows.last_mut() {
            row.push((i, x));
        }
        x += w;
    }
    rows
}

/// Spend per period as bars (left axis) with the running total as a line
/// (right axis); `periods` are contiguous time keys with what was spent.
pub fn spend_chart(
    title: &str,
    x_desc: &str,
    bar_name: &str,
    periods: &[(String, f64)],
    width: u32,
    height: u32,
) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let n = periods.len().max(1);
        let top = periods.iter().map(|p| p.1).fold(0.0_f64, f64::max).max(1e-9) * 1.45;
        let total = periods.iter().map(|p| p.1).sum::<f64>().max(1e-9) * 1.1;
        let labels: Vec<String> = periods.iter().map(|p| p.0.clone()).collect();
        let shown = shown_labels(&labels, width);
        let mut chart = frame(root, title, 60)
            .right_y_label_area_size(60)
            .build_cartesian_2d(0f64..n as f64, 0f64..top)?
            .set_secondary_coord(0f64..n as f64, 0f64..total);
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                match shown.get(i as usize) {
                    Some(l) if ((x - 0.5) - i).abs() < 1e-6 && i >= 0.0 => l.clone(),
                    _ => String::new(),
                }
            })
            .y_label_formatter(&|v| format!("${}", compact(*v)))
            .y_desc(format!("{bar_name} (USD)"))
            .x_desc(x_desc)
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        chart
            .configure_secondary_axes()
            .y_label_formatter(&|v| format!("${}", compact(*v)))
            .y_desc("Cumulative (USD)")
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        let bar = BAR.mix(0.85).filled();
        chart
            .draw_series(
                periods
                    .iter()
                    .enumerate()
                    .map(|(i, p)| Rectangle::new([(i as f64 + 0.15, 0.0), (i as f64 + 0.85, p.1)], bar)),
            )?
            .label(bar_name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], bar));
        let line = SERIES[1];
        let mut running = 0.0;
        let points: Vec<(f64, f64)> = periods
            .iter()
            .enumerate()
            .map(|(i, p)| {
                running += p.1;
                (i as f64 + 0.5, running)
            })
            .collect();
        chart
            .draw_secondary_series(LineSeries::new(points, line.stroke_width(2)))?
            .label("Cumulative (right axis)")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], line.stroke_width(2)));
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        Ok(())
    })
}

/// 1234.5 as `1.2k`, 0.0123 as `0.012`: short tick labels.
fn compact(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Shares as labelled bars (`share`, and the count it is of) against a
/// dashed reference line named in the legend.
pub fn share_bars(
    title: &str,
    x_desc: &str,
    rows: &[(String, f64, i64)],
    reference: (f64, &str),
    width: u32,
    height: u32,
) -> String {
    svg(width, height, |root| {
        root.fill(&WHITE)?;
        let n = rows.len().max(1);
        let shares = Ticked::new(0.0..1.3, &[0.0, 0.2, 0.4, 0.6, 0.8, 1.0]);
        let mut chart = frame(root, title, 52).build_cartesian_2d(0f64..n as f64, shares)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(TRANSPARENT)
            .x_labels(n * 2 + 1)
            .x_label_formatter(&|x| {
                let i = (x - 0.5).round();
                match rows.get(i as usize) {
                    Some(r) if ((x - 0.5) - i).abs() < 1e-6 && i >= 0.0 => short_key(&r.0),
                    _ => String::new(),
                }
            })
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .y_desc("Share of all reports (%)")
            .x_desc(x_desc)
            .label_style(font(12))
            .axis_desc_style(font(12))
            .draw()?;
        chart.draw_series(
            rows.iter()
                .enumerate()
                .map(|(i, r)| Rectangle::new([(i as f64 + 0.2, 0.0), (i as f64 + 0.8, r.1)], BAR.mix(0.85).filled())),
        )?;
        chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
            Text::new(
                format!("{} (n={})", failpass_shared::format::percent(Some(r.1)), r.2),
                (i as f64 + 0.5, r.1 + 0.03),
                font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )
        }))?;
        let (y, label) = reference;
        chart
            .draw_series(DashedLineSeries::new(vec![(0.0, y), (n as f64, y)], 8, 5, INK.stroke_width(2)))?
            .label(label)
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], INK.stroke_width(2)));
        draw_legend(&mut chart, SeriesLabelPosition::UpperRight)?;
        Ok(())
    })
}

/// The font PNGs are drawn with: DejaVu Sans (Bitstream Vera licence,
/// `backend/fonts/DejaVuSans-LICENSE.txt`), embedded so a server without
/// fonts draws the same picture.
const FONT: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// An SVG drawn here as a PNG `width` pixels wide (resvg, scaled to fit),
/// its `sans-serif` text in [`FONT`].
pub fn rasterize(svg: &str, width: u32) -> Result<Vec<u8>, String> {
    use resvg::{tiny_skia, usvg};
    static FONTS: std::sync::OnceLock<std::sync::Arc<usvg::fontdb::Database>> = std::sync::OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        let mut db = usvg::fontdb::Database::new();
        db.load_font_data(FONT.to_vec());
        db.set_sans_serif_family("DejaVu Sans");
        std::sync::Arc::new(db)
    });
    let options = usvg::Options { fontdb: fonts.clone(), ..Default::default() };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| e.to_string())?;
    let scale = width as f32 / tree.size().width();
    let size = tree.size().to_int_size().scale_by(scale).ok_or("an empty drawing")?;
    let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height()).ok_or("an empty drawing")?;
    resvg::render(&tree, tiny_skia::Transform::from_scale(scale, scale), &mut pixmap.as_mut());
    pixmap.encode_png().map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_axes_carry_the_year_where_it_changes() {
        let weeks: Vec<String> = ["2025-12-22", "2025-12-29", "2026-01-05", "2026-01-12"].map(String::from).to_vec();
        assert_eq!(shown_labels(&weeks, 900), ["2025-12-22", "12-29", "2026-01-05", "01-12"]);
        // Narrow: every second label, and the year still shows where it changes.
        assert_eq!(shown_labels(&weeks, 280), ["2025-12-22", "", "2026-01-05", ""]);
        let months: Vec<String> = ["2025-11", "2025-12", "2026-01"].map(String::from).to_vec();
        assert_eq!(shown_labels(&months, 900), ["Nov 2025", "Dec", "Jan 2026"]);
        let agents: Vec<String> = ["repgen", "2026"].map(String::from).to_vec();
        assert_eq!(shown_labels(&agents, 900), ["repgen", "2026"], "not every label is a date");
    }

    #[test]
    fn percent_axes_tick_no_higher_than_100() {
        let svg = rate_bars("Rate", "Route", &[], 560, 340);
        assert!(svg.contains(">\n100%\n<") && !svg.contains("120%"), "{svg}");
        // every text at 12 px or more (plotters shrinks what it is asked for)
        let sizes: Vec<f64> =
            svg.split("font-size=\"").skip(1).filter_map(|t| t.split('"').next()?.parse().ok()).collect();
        assert!(!sizes.is_empty() && sizes.iter().all(|s| *s >= 11.99), "{sizes:?}");
    }
}
