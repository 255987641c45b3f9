//! Charts drawn with plotters into SVG strings.

use failpass_shared::api::figures::FigureRow;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// A chart's drawing width: `preferred`, or the viewport's width less the
/// page's padding on a narrow screen, so its text stays readable (an SVG
/// drawn wide and scaled down shrinks its labels with it).
pub fn chart_width(preferred: u32) -> u32 {
    let viewport = web_sys::window().and_then(|w| w.inner_width().ok()).and_then(|v| v.as_f64()).unwrap_or(preferred as f64);
    (viewport as u32).saturating_sub(64).clamp(280, preferred)
}

const BAR: RGBColor = RGBColor(0x2f, 0x6f, 0xb3);
const INK: RGBColor = RGBColor(0x22, 0x26, 0x2b);

/// Reproduction rate per group as bars with Wilson 95% whiskers; each bar is
/// labelled with its rate and sample size, so colour carries nothing alone.
pub fn rate_bars(title: &str, rows: &[FigureRow], width: u32, height: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        if draw_rate_bars(&root, title, rows).is_err() {
            drop(root);
            return String::new();
        }
        let _ = root.present();
    }
    svg
}

fn draw_rate_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    rows: &[FigureRow],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    // A segmented range `0..k` has k + 1 segments.
    let last = (rows.len() as i32 - 1).max(0);
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16).into_font().color(&INK))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d((0..last).into_segmented(), 0f64..134f64)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .y_desc("Reproduction rate (%)")
        .x_desc("Route")
        // Headroom above 100% holds the bar labels (up to ~110) and, above them,
        // the legend; no tick is drawn there.
        .y_label_formatter(&|v| if *v <= 100.0 { format!("{v:.0}%") } else { String::new() })
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows.get(*i as usize).map(|r| r.key.replace('_', " ")).unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 12).into_font().color(&INK))
        .axis_desc_style(("sans-serif", 12).into_font().color(&INK))
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
            ("sans-serif", 12).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.9))
        .border_style(INK.mix(0.3))
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 12).into_font().color(&INK))
        .draw()?;
    Ok(())
}

/// Counts per category as labelled bars (each bar carries its number).
pub fn count_bars(title: &str, x_desc: &str, y_desc: &str, rows: &[(String, i64)], width: u32, height: u32) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        if draw_count_bars(&root, title, x_desc, y_desc, rows).is_err() {
            drop(root);
            return String::new();
        }
        let _ = root.present();
    }
    svg
}

fn draw_count_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    rows: &[(String, i64)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let last = (rows.len() as i32 - 1).max(0);
    let top = rows.iter().map(|r| r.1).max().unwrap_or(1).max(1) as f64 * 1.18;
    let mut chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 16).into_font().color(&INK))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(52)
        .build_cartesian_2d((0..last).into_segmented(), 0f64..top)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .y_desc(y_desc)
        .x_desc(x_desc)
        .y_label_formatter(&|v| format!("{v:.0}"))
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => rows.get(*i as usize).map(|r| r.0.replace('_', " ")).unwrap_or_default(),
            _ => String::new(),
        })
        .label_style(("sans-serif", 12).into_font().color(&INK))
        .axis_desc_style(("sans-serif", 12).into_font().color(&INK))
        .draw()?;
    chart.draw_series(
        Histogram::vertical(&chart).style(BAR.mix(0.85).filled()).margin(18).data(rows.iter().enumerate().map(|(i, r)| (i as i32, r.1 as f64))),
    )?;
    chart.draw_series(rows.iter().enumerate().map(|(i, r)| {
        Text::new(
            r.1.to_string(),
            (SegmentValue::CenterOf(i as i32), r.1 as f64 + top * 0.02),
            ("sans-serif", 12).into_font().color(&INK).pos(Pos::new(HPos::Center, VPos::Bottom)),
        )
    }))?;
    Ok(())
}
