//! `failpass routing eval --truth FILE`: the routing rule measured on
//! labelled reports, with a fixed split between what trains the classifier
//! and what measures it.
//!
//! The split is by a stable hash of each row's `group`, or its `id` without
//! one (FNV-1a 64, odd to `measure`, even to `train`), so it never depends
//! on the file's order, a row stays on its side when rows are added, and
//! rows of one group (one pull request listed twice) stay together.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use failpass_shared::hash::fnv1a64;
use failpass_shared::model::Route;
use failpass_shared::routing::eval::{Confusion, wilson};
use failpass_shared::routing::sections::learn;
use failpass_shared::routing::{Boilerplate, Classifier, Example, RoutingConfig, RoutingInput, decide_with};

use crate::config::RoutingEvalArgs;

/// The examples failpass ships for its classifier: hand-written reports of
/// many libraries, none taken from the data it is measured on.
pub const SHIPPED_EXAMPLES: &str = include_str!("../../routing-examples.csv");

/// One labelled report.
#[derive(Debug, Clone, PartialEq)]
pub struct TruthRow {
    pub line: usize,
    pub id: String,
    /// Rows of one group stay on one side of the split (`group` column; the id when absent).
    pub group: String,
    /// The tracker it comes from (`project` column; the id before `#`, or `all`).
    pub project: String,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub paths: Vec<String>,
    /// A route, or `human_first`/`other` when the file says only whether it is harness.
    pub truth: String,
}

impl TruthRow {
    pub fn harness(&self) -> bool {
        self.truth == Route::HumanFirst.as_str()
    }

    pub fn example(&self) -> Example {
        Example {
            title: self.title.clone(),
            body: self.body.clone(),
            labels: self.labels.clone(),
            harness: self.harness(),
        }
    }

    /// Which side of the fixed split the row is on.
    pub fn measures(&self) -> bool {
        fnv1a64(self.group.as_bytes()) % 2 == 1
    }
}

/// Whether the truth gives routes or only harness-or-not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TruthKind {
    Route,
    Harness,
}

/// A project's corrected routes as a truth file (JSON Lines, one report a
/// line: `id`, `title`, `body`, `labels`, `route`), for `routing eval --truth`.
pub fn corrections_truth(project: &str, rows: &[crate::db::reports::CorrectedRoute]) -> String {
    rows.iter()
        .map(|c| {
            let line = serde_json::json!({
                "id": format!("{project}#{}", c.external_id),
                "title": c.title,
                "body": c.body,
                "labels": c.labels,
                "route": c.route.as_str(),
            });
            format!("{line}\n")
        })
        .collect()
}

/// Reads a truth file: CSV (a header row) or JSON Lines (`.jsonl`, `.ndjson`).
pub fn load_truth(path: &Path) -> anyhow::Result<(TruthKind, Vec<TruthRow>)> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let json = matches!(path.extension().and_then(|e| e.to_str()), Some("jsonl" | "ndjson" | "json"));
    parse_truth(&text, json).with_context(|| format!("in {}", path.display()))
}

/// Parses truth text; every problem names its line and column.
pub fn parse_truth(text: &str, json: bool) -> anyhow::Result<(TruthKind, Vec<TruthRow>)> {
    let records: Vec<(usize, serde_json::Map<String, serde_json::Value>)> = if json {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| match serde_json::from_str(l) {
                Ok(serde_json::Value::Object(m)) => Ok((i + 1, m)),
                Ok(_) => bail!("line {}: not a JSON object", i + 1),
                Err(e) => bail!("line {}: not JSON: {e}", i + 1),
            })
            .collect::<anyhow::Result<_>>()?
    } else {
        let mut reader = csv::ReaderBuilder::new().flexible(false).from_reader(text.as_bytes());
        let headers = reader.headers().context("line 1: reading the header")?.clone();
        reader
            .records()
            .map(|r| {
                let r = r.map_err(|e| anyhow::anyhow!("{e}"))?;
                let line = r.position().map_or(0, |p| p.line() as usize);
                let m = headers
                    .iter()
                    .zip(r.iter())
                    .map(|(h, v)| (h.trim().to_owned(), serde_json::Value::String(v.to_owned())))
                    .collect();
                Ok((line, m))
            })
            .collect::<anyhow::Result<_>>()?
    };
    let Some((_, first)) = records.first() else { bail!("no labelled rows") };
    let kind = match (first.contains_key("route"), first.contains_key("harness")) {
        (true, _) => TruthKind::Route,
        (false, true) => TruthKind::Harness,
        (false, false) => bail!("line {}: needs a `route` or a `harness` column", records[0].0),
    };
    let mut rows = Vec::with_capacity(records.len());
    let mut seen = std::collections::HashSet::new();
    for (line, m) in records {
        let text_of = |key: &str| -> anyhow::Result<String> {
            match m.get(key) {
                None | Some(serde_json::Value::Null) => Ok(String::new()),
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
                Some(serde_json::Value::Bool(b)) => Ok(b.to_string()),
                Some(_) => bail!("line {line}: `{key}` is not text"),
            }
        };
        let list_of = |key: &str| -> anyhow::Result<Vec<String>> {
            match m.get(key) {
                Some(serde_json::Value::Array(a)) => a
                    .iter()
                    .map(|v| {
                        v.as_str()
                            .map(str::to_owned)
                            .ok_or_else(|| anyhow::anyhow!("line {line}: `{key}` holds a non-text item"))
                    })
                    .collect(),
                _ => {
                    let t = text_of(key)?;
                    if t.trim_start().starts_with('[') {
                        serde_json::from_str(&t)
                            .map_err(|e| anyhow::anyhow!("line {line}: `{key}` is not a JSON list of text: {e}"))
                    } else {
                        Ok(t.split(';').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect())
                    }
                }
            }
        };
        let id = text_of("id")?;
        if id.trim().is_empty() {
            bail!("line {line}: `id` is missing or empty");
        }
        if !seen.insert(id.clone()) {
            bail!("line {line}: id `{id}` appears twice");
        }
        let title = text_of("title")?;
        if title.trim().is_empty() {
            bail!("line {line}: `title` is missing or empty");
        }
        let truth = match kind {
            TruthKind::Route => {
                let r = text_of("route")?;
                r.trim().parse::<Route>().map_err(|e| anyhow::anyhow!("line {line}: `route`: {e}"))?.as_str().to_owned()
            }
            TruthKind::Harness => match text_of("harness")?.trim().to_lowercase().as_str() {
                "true" | "1" | "yes" => Route::HumanFirst.as_str().to_owned(),
                "false" | "0" | "no" => "other".to_owned(),
                other => bail!("line {line}: `harness` is `{other}`; use true or false"),
            },
        };
        let group = Some(text_of("group")?).filter(|g| !g.trim().is_empty()).unwrap_or_else(|| id.clone());
        let project = Some(text_of("project")?)
            .filter(|p| !p.trim().is_empty())
            .or_else(|| id.split_once('#').map(|(p, _)| p.to_owned()))
            .unwrap_or_else(|| "all".to_owned());
        rows.push(TruthRow {
            line,
            id,
            group,
            project,
            title,
            body: text_of("body")?,
            labels: list_of("labels")?,
            paths: list_of("paths")?,
            truth,
        });
    }
    Ok((kind, rows))
}

const FOLDS: u64 = 5;

/// The shipped examples, parsed (they are checked by a test).
pub fn shipped_examples() -> Vec<Example> {
    parse_truth(SHIPPED_EXAMPLES, false)
        .map(|(_, rows)| rows.iter().map(TruthRow::example).collect())
        .unwrap_or_default()
}

/// One measured variant of the rule.
pub struct Measured {
    pub name: String,
    pub confusion: Confusion,
    /// The same, per project.
    pub projects: BTreeMap<String, Confusion>,
    /// Per project: library bugs with a code block and a stated wrong
    /// result and no crash (silent numerical bugs), and how many of them
    /// went to a human.
    pub silent: BTreeMap<String, (u64, u64)>,
    pub flagged: u64,
    pub errors: Vec<String>,
}

/// What a variant reads a row with: its classifier and its project's boilerplate.
pub struct Reader<'m> {
    pub model: &'m dyn Fn(&TruthRow) -> Option<&'m Classifier>,
    pub boilerplate: &'m dyn Fn(&TruthRow) -> Option<&'m Boilerplate>,
}

/// Decides every row under `reader` and counts (truth, decision).
pub fn measure(name: &str, cfg: &RoutingConfig, reader: &Reader<'_>, kind: TruthKind, rows: &[&TruthRow]) -> Measured {
    let classes: &[&str] = match kind {
        TruthKind::Route => &["human_first", "agent_first", "hypothesis"],
        TruthKind::Harness => &["human_first", "other"],
    };
    let mut m = Measured {
        name: name.to_owned(),
        confusion: Confusion::new(classes),
        projects: BTreeMap::new(),
        silent: BTreeMap::new(),
        flagged: 0,
        errors: Vec::new(),
    };
    for r in rows {
        let d = decide_with(
            cfg,
            (reader.model)(r),
            &RoutingInput {
                title: &r.title,
                body: &r.body,
                labels: &r.labels,
                paths: &r.paths,
                environment: None,
                oracle: None,
                upstream_kind: None,
                boilerplate: (reader.boilerplate)(r),
            },
        );
        let decided = match (kind, d.route) {
            (TruthKind::Harness, Route::AgentFirst | Route::Hypothesis) => "other",
            (_, route) => route.as_str(),
        };
        if d.route_check {
            m.flagged += 1;
        }
        let f = &d.features;
        let silent = !r.harness() && f.has_code_block && f.has_expected_actual && !f.has_traceback;
        if silent {
            let s = m.silent.entry(r.project.clone()).or_default();
            s.0 += 1;
            s.1 += u64::from(d.route == Route::HumanFirst);
        }
        if decided != r.truth {
            let why = d.explanation.first().map(|e| e.evidence.as_str()).unwrap_or_default();
            let tag = if silent { " (silent numerical bug)" } else { "" };
            m.errors.push(format!("  {}  truth {} decided {}{tag}  {:?}  [{why}]", r.id, r.truth, decided, r.title));
        }
        m.confusion.add(&r.truth, decided);
        m.projects.entry(r.project.clone()).or_insert_with(|| Confusion::new(classes)).add(&r.truth, decided);
    }
    m
}

/// Each project's boilerplate, learned from its rows on the train split
/// (so the measuring rows never teach what is discounted in them).
fn learned_boilerplate(cfg: &RoutingConfig, training: &[&TruthRow]) -> BTreeMap<String, Boilerplate> {
    let mut bodies: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for r in training {
        bodies.entry(&r.project).or_default().push(&r.body);
    }
    bodies
        .into_iter()
        .map(|(p, b)| {
            let lines = learn(&b, cfg.boilerplate_min_reports as usize, cfg.boilerplate_share);
            (p.to_owned(), Boilerplate::from_learned(&lines))
        })
        .collect()
}

/// Runs the evaluation and returns its printout.
pub fn run(args: &RoutingEvalArgs, cfg: &RoutingConfig) -> anyhow::Result<String> {
    let (kind, mut rows) = load_truth(&args.truth)?;
    for f in &args.fields {
        if !["title", "body", "labels", "paths"].contains(&f.as_str()) {
            bail!("--fields: `{f}` is not one of title, body, labels, paths");
        }
    }
    let keep = |f: &str| args.fields.iter().any(|x| x == f);
    for r in &mut rows {
        if !keep("title") {
            r.title = String::new();
        }
        if !keep("body") {
            r.body.clear();
        }
        if !keep("labels") {
            r.labels.clear();
        }
        if !keep("paths") {
            r.paths.clear();
        }
    }
    let (measuring, training): (Vec<&TruthRow>, Vec<&TruthRow>) = rows.iter().partition(|r| r.measures());
    let evaluated: Vec<&TruthRow> = match args.split.as_str() {
        "measure" => measuring.clone(),
        "train" => training.clone(),
        "all" => rows.iter().collect(),
        other => bail!("--split: `{other}` is not one of measure, train, all"),
    };
    let shipped = shipped_examples();
    let mut with_split = shipped.clone();
    with_split.extend(training.iter().map(|r| r.example()));
    let shipped_model = Classifier::train(&shipped, Some(cfg.harness_prior));
    let split_model = Classifier::train(&with_split, Some(cfg.harness_prior));
    // Measured on the rows it trains on, the classifier would look better
    // than it is: on `train`, each fifth is decided by a model trained on
    // the shipped examples and the other four fifths (cross-validation).
    let fold = |r: &TruthRow| (fnv1a64(r.group.as_bytes()) / 2 % FOLDS) as usize;
    let fold_models: Vec<Option<Classifier>> = (0..FOLDS as usize)
        .map(|k| {
            let mut ex = shipped.clone();
            ex.extend(training.iter().filter(|r| fold(r) != k).map(|r| r.example()));
            Classifier::train(&ex, Some(cfg.harness_prior))
        })
        .collect();
    let boilerplate = learned_boilerplate(cfg, &training);

    let mut out = String::new();
    let harness = |rows: &[&TruthRow]| rows.iter().filter(|r| r.harness()).count();
    writeln!(
        out,
        "truth: {} ({} rows, {} harness); fields: {}",
        args.truth.display(),
        rows.len(),
        harness(&rows.iter().collect::<Vec<_>>()),
        args.fields.join(",")
    )?;
    writeln!(
        out,
        "split: fnv1a64(group or id) odd -> measure ({} rows, {} harness), even -> train ({} rows, {} harness); evaluated on: {}",
        measuring.len(),
        harness(&measuring),
        training.len(),
        harness(&training),
        args.split
    )?;
    let learned: Vec<String> =
        boilerplate.iter().filter(|(_, b)| !b.is_empty()).map(|(p, b)| format!("{p} {}", b.len())).collect();
    writeln!(
        out,
        "boilerplate learned from the train split (lines): {}",
        if learned.is_empty() { "none".to_owned() } else { learned.join(", ") }
    )?;
    if args.split != "measure" {
        writeln!(
            out,
            "note: on `{}` the classifier with the train split is cross-validated ({FOLDS} folds of the train split)",
            args.split
        )?;
    }
    let no_model = |_: &TruthRow| None::<&Classifier>;
    let no_boilerplate = |_: &TruthRow| None::<&Boilerplate>;
    let project_boilerplate = |r: &TruthRow| boilerplate.get(&r.project);
    let variants = [
        measure("rule", cfg, &Reader { model: &no_model, boilerplate: &no_boilerplate }, kind, &evaluated),
        measure(
            "rule + each project's boilerplate (the default)",
            cfg,
            &Reader { model: &no_model, boilerplate: &project_boilerplate },
            kind,
            &evaluated,
        ),
        measure(
            &format!("rule + boilerplate + classifier trained on the {} shipped examples", shipped.len()),
            cfg,
            &Reader { model: &|_| shipped_model.as_ref(), boilerplate: &project_boilerplate },
            kind,
            &evaluated,
        ),
        measure(
            &format!(
                "rule + boilerplate + classifier trained on the shipped examples and the train split ({} examples)",
                with_split.len()
            ),
            cfg,
            &Reader {
                model: &|r: &TruthRow| {
                    if r.measures() { split_model.as_ref() } else { fold_models[fold(r)].as_ref() }
                },
                boilerplate: &project_boilerplate,
            },
            kind,
            &evaluated,
        ),
    ];
    for m in &variants {
        writeln!(out, "\n== {} ==", m.name)?;
        out.push_str(&m.confusion.table());
        for class in m.confusion.classes() {
            if kind == TruthKind::Harness && class == "other" {
                continue;
            }
            let s = m.confusion.score(class);
            writeln!(
                out,
                "{:<12} precision {}  recall {}  ({} correct of {} decided, {} true)",
                s.class,
                fmt_ratio(s.precision),
                fmt_ratio(s.recall),
                s.correct,
                s.decided,
                s.truth
            )?;
        }
        writeln!(out, "flagged for a human look (route_check): {} of {}", m.flagged, m.confusion.total())?;
        out.push_str(&project_table(m));
        if args.errors {
            writeln!(out, "wrong:")?;
            for e in &m.errors {
                writeln!(out, "{e}")?;
            }
        }
    }
    Ok(out)
}

/// Per project and overall: harness precision and recall, and the share of
/// silent numerical bugs sent to a human, each with its sample size and
/// 95% Wilson interval.
fn project_table(m: &Measured) -> String {
    let mut out = String::from(
        "| project | reports | harness | harness precision | harness recall | human first | silent numerical bugs to a human |\n\
         | --- | ---: | ---: | --- | --- | ---: | --- |\n",
    );
    let total_silent = m.silent.values().fold((0, 0), |a, s| (a.0 + s.0, a.1 + s.1));
    let rows = m
        .projects
        .iter()
        .map(|(p, c)| (p.as_str(), c, m.silent.get(p).copied().unwrap_or_default()))
        .chain(std::iter::once(("overall", &m.confusion, total_silent)));
    for (project, c, (silent, silent_human)) in rows {
        let h = c.score("human_first");
        let _ = writeln!(
            out,
            "| {project} | {} | {} | {} | {} | {} | {} |",
            c.total(),
            h.truth,
            share(h.correct, h.decided),
            share(h.correct, h.truth),
            h.decided,
            share(silent_human, silent),
        );
    }
    out
}

/// `k/n = 0.xx [lo, hi]`, or `n/a (0)`.
fn share(k: u64, n: u64) -> String {
    match wilson(k, n) {
        None => "n/a (0)".to_owned(),
        Some((lo, hi)) => format!("{k}/{n} = {:.2} [{lo:.2}, {hi:.2}]", k as f64 / n as f64),
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or_else(|| "  n/a".to_owned(), |r| format!("{r:.3}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_examples_parse_and_hold_both_classes() {
        let (kind, rows) = parse_truth(SHIPPED_EXAMPLES, false).unwrap();
        assert_eq!(kind, TruthKind::Harness);
        let h = rows.iter().filter(|r| r.harness()).count();
        assert!(h >= 50 && rows.len() - h >= 50, "{h} of {}", rows.len());
        assert!(Classifier::train(&shipped_examples(), None).is_some());
    }

    #[test]
    fn truth_files_are_read_as_csv_or_json_lines_and_errors_name_the_line() {
        let (kind, rows) =
            parse_truth("id,title,labels,route\n1,a,\"x; y\",human_first\n2,b,,hypothesis\n", false).unwrap();
        assert_eq!(kind, TruthKind::Route);
        assert_eq!(rows[0].labels, ["x", "y"]);
        assert_eq!(rows[1].line, 3);
        let (kind, rows) =
            parse_truth("{\"id\":7,\"title\":\"t\",\"labels\":[\"build\"],\"harness\":true}\n", true).unwrap();
        assert_eq!(kind, TruthKind::Harness);
        assert_eq!((rows[0].id.as_str(), rows[0].truth.as_str()), ("7", "human_first"));
        for (text, json, msg) in [
            ("id,title\n1,a\n", false, "needs a `route` or a `harness` column"),
            ("id,title,route\n1,a,human\n", false, "line 2: `route`"),
            ("id,title,harness\n1,a,maybe\n", false, "line 2: `harness` is `maybe`"),
            ("id,title,harness\n1,a,true\n1,b,false\n", false, "line 3: id `1` appears twice"),
            ("id,title,harness\n,a,true\n", false, "line 2: `id` is missing"),
            ("{\"id\":1}\nnot json\n", true, "line 2: not JSON"),
            ("id,title,harness\n", false, "no labelled rows"),
        ] {
            let e = format!("{:#}", parse_truth(text, json).unwrap_err());
            assert!(e.contains(msg), "{text:?}: {e}");
        }
    }

    #[test]
    fn eval_prints_the_matrix_and_scores_of_each_variant() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("truth.csv");
        let mut text = String::from("id,title,labels,harness\n");
        for i in 0..40 {
            text.push_str(&format!("b{i},CMake build fails on Windows {i},,true\n"));
            text.push_str(&format!("n{i},softmax returns nan {i},,false\n"));
        }
        text.push_str("x1,something odd,module: build,true\n");
        std::fs::write(&path, text).unwrap();
        let args = RoutingEvalArgs {
            truth: path.clone(),
            routing_config: None,
            split: "all".into(),
            fields: vec!["title".into(), "labels".into()],
            errors: true,
        };
        let out = run(&args, &RoutingConfig::default()).unwrap();
        assert!(out.contains("(81 rows, 41 harness)"), "{out}");
        assert!(
            out.contains("human_first  precision 1.000  recall 1.000  (41 correct of 41 decided, 41 true)"),
            "{out}"
        );
        assert_eq!(out.matches("== rule").count(), 4, "{out}");
        // Without labels, the labelled row is missed, and named with --errors.
        let out =
            run(&RoutingEvalArgs { fields: vec!["title".into()], ..args.clone() }, &RoutingConfig::default()).unwrap();
        assert!(out.contains("recall 0.976"), "{out}");
        assert!(out.contains("x1  truth human_first decided other"), "{out}");
        let e = run(&RoutingEvalArgs { split: "dev".into(), ..args.clone() }, &RoutingConfig::default()).unwrap_err();
        assert!(e.to_string().contains("--split: `dev`"), "{e}");
        let e = run(&RoutingEvalArgs { fields: vec!["author".into()], ..args }, &RoutingConfig::default()).unwrap_err();
        assert!(e.to_string().contains("--fields: `author`"), "{e}");
    }

    #[test]
    fn corrected_routes_read_back_as_truth() {
        let rows = vec![
            crate::db::reports::CorrectedRoute {
                external_id: "7".into(),
                title: "CUDA driver too old".into(),
                body: "line one\n\"quoted\", with a comma".into(),
                labels: vec!["module: build".into(), "a;b".into()],
                route: Route::HumanFirst,
            },
            crate::db::reports::CorrectedRoute {
                external_id: "8".into(),
                title: "NaN after step 3".into(),
                body: String::new(),
                labels: vec![],
                route: Route::AgentFirst,
            },
        ];
        let text = corrections_truth("o/n", &rows);
        let (kind, truth) = parse_truth(&text, true).unwrap();
        assert_eq!(kind, TruthKind::Route);
        assert_eq!(truth.len(), 2);
        assert_eq!((truth[0].id.as_str(), truth[0].harness()), ("o/n#7", true));
        assert_eq!(truth[0].labels, ["module: build", "a;b"], "labels kept as a list");
        assert_eq!(truth[0].body, rows[0].body);
        assert_eq!((truth[1].truth.as_str(), truth[1].harness()), ("agent_first", false));
    }

    #[test]
    fn the_split_is_fixed_by_id() {
        let row = |id: &str| TruthRow {
            line: 1,
            id: id.into(),
            group: id.into(),
            project: "all".into(),
            title: "t".into(),
            body: String::new(),
            labels: vec![],
            paths: vec![],
            truth: "other".into(),
        };
        let sides: Vec<bool> = (0..200).map(|i| row(&i.to_string()).measures()).collect();
        let measuring = sides.iter().filter(|s| **s).count();
        assert!((70..130).contains(&measuring), "{measuring}");
        assert_eq!(sides, (0..200).map(|i| row(&i.to_string()).measures()).collect::<Vec<_>>());
    }
}
