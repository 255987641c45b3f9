//! The shapes of what a mapping reads: its input (a JSON array of records,
//! an object of records keyed by id, JSON Lines, or a CSV with a header),
//! and the files beside it (a join, a full set) in any of those shapes. An
//! input of no shape a mapping reads stops the import with one message
//! before anything is stored.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{DenominatorMapping, JoinMapping, row::json_template};

/// The field that carries a record's id in an object keyed by id (`{_key}`).
pub const KEY_FIELD: &str = "_key";

const SHAPES: &str =
    "a mapping reads a JSON array of records, an object of records keyed by id, or one record per line (JSON Lines)";

/// What a JSON value is, for messages.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// What a JSON document holds: records keyed by id, or records numbered
/// from 1 (by line for JSON Lines; a line that is not JSON is its own
/// refusal).
enum Shape {
    Keyed(Vec<(String, Value)>),
    Numbered(Vec<(u64, Result<Value, String>)>),
}

/// Reads `text` once as a JSON array, an object (keyed records, or one
/// record) or JSON Lines; an input of no such shape is one error.
fn shape(text: &str) -> anyhow::Result<Shape> {
    let trimmed = text.trim_start();
    if trimmed.is_empty() {
        anyhow::bail!("the input is empty; {SHAPES}");
    }
    if trimmed.starts_with('{') {
        return match in_file_order(text) {
            Ok(entries) => Ok(match keyed(entries) {
                Ok(records) => Shape::Keyed(records),
                Err(one) => Shape::Numbered(vec![(1, Ok(one))]),
            }),
            Err(whole) => json_lines(text, Some(whole)),
        };
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(items)) => {
            Ok(Shape::Numbered(items.into_iter().enumerate().map(|(i, v)| (i as u64 + 1, Ok(v))).collect()))
        }
        Ok(other) => anyhow::bail!("the input is a JSON {}, not records; {SHAPES}", kind(&other)),
        Err(e) if trimmed.starts_with('[') => anyhow::bail!("the input is not a JSON array: {e}"),
        Err(_) => json_lines(text, None),
    }
}

/// One record per line; `object` is why the text, which starts with `{`,
/// is not one JSON object.
fn json_lines(text: &str, object: Option<serde_json::Error>) -> anyhow::Result<Shape> {
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).peekable();
    if let Some((i, first)) = lines.peek() {
        match (serde_json::from_str::<Value>(first), &object) {
            (Ok(Value::Object(_)), _) => {}
            (Ok(other), _) => {
                anyhow::bail!("line {} of the input is a JSON {}, not a record; {SHAPES}", i + 1, kind(&other))
            }
            (Err(e), Some(whole)) if !whole.is_eof() => {
                anyhow::bail!(
                    "the input is neither one JSON object ({whole}) nor JSON Lines (line {}: {e}); {SHAPES}",
                    i + 1
                )
            }
            (Err(e), _) => anyhow::bail!("the input is not JSON (line {}: {e}); {SHAPES}", i + 1),
        }
    }
    Ok(Shape::Numbered(
        lines.map(|(i, l)| (i as u64 + 1, serde_json::from_str(l).map_err(|e| e.to_string()))).collect(),
    ))
}

/// The records of a JSON input, numbered from 1 (by line for JSON Lines).
/// A record that is not an object, or a later line that is not JSON, is
/// refused on its own; an input whose shape is wrong is one error.
pub fn json_records(text: &str) -> anyhow::Result<Vec<(u64, Result<Value, String>)>> {
    Ok(match shape(text)? {
        Shape::Keyed(records) => records.into_iter().enumerate().map(|(i, (_, v))| (i as u64 + 1, Ok(v))).collect(),
        Shape::Numbered(records) => records,
    })
}

/// A JSON object's entries in the order the file has them, each key as
/// often as the file gives it (a map would sort them and keep the last).
fn in_file_order(text: &str) -> serde_json::Result<Vec<(String, Value)>> {
    struct Entries(Vec<(String, Value)>);
    impl<'de> serde::Deserialize<'de> for Entries {
        fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = Entries;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Entries, A::Error> {
                    let mut out = Vec::new();
                    while let Some(entry) = m.next_entry::<String, Value>()? {
                        out.push(entry);
                    }
                    Ok(Entries(out))
                }
            }
            d.deserialize_map(Visit)
        }
    }
    serde_json::from_str::<Entries>(text).map(|e| e.0)
}

/// An object whose values are all records, as records carrying their id in
/// [`KEY_FIELD`] (unless they have that field already); else the object
/// itself, a single record.
fn keyed(entries: Vec<(String, Value)>) -> Result<Vec<(String, Value)>, Value> {
    if entries.is_empty() || !entries.iter().all(|(_, v)| v.is_object()) {
        return Err(Value::Object(entries.into_iter().collect()));
    }
    Ok(entries
        .into_iter()
        .map(|(k, mut v)| {
            if let Some(o) = v.as_object_mut() {
                o.entry(KEY_FIELD).or_insert_with(|| Value::String(k.clone()));
            }
            (k, v)
        })
        .collect())
}

/// Refuses a CSV input that is really JSON, with one message.
pub fn check_csv(text: &str) -> anyhow::Result<()> {
    match text.trim_start().chars().next() {
        None => anyhow::bail!("the input is empty; a CSV needs a header row"),
        Some(c @ ('{' | '[')) => {
            anyhow::bail!(
                "the input starts with `{c}`: it looks like JSON, not a CSV with a header row (use --format json)"
            )
        }
        _ => Ok(()),
    }
}

/// A file beside the input, relative to the input's folder.
fn beside(file: &str, input_dir: Option<&Path>) -> PathBuf {
    let path = Path::new(file);
    match input_dir {
        Some(dir) if path.is_relative() => dir.join(path),
        _ => path.to_path_buf(),
    }
}

/// The records of a join or full-set file, each with its id when the file
/// is an object keyed by id. A `.csv` file is a table with a header row
/// (its cells are text); anything else is JSON in one of the input's shapes.
pub fn table(path: &Path) -> anyhow::Result<Vec<(Option<String>, Value)>> {
    let at = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
    let text = crate::input::strip_bom(&text);
    if path.extension().is_some_and(|e| e.eq_ignore_ascii_case("csv")) {
        check_csv(text).map_err(|e| anyhow::anyhow!("{at}: {e}"))?;
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
        let headers: Vec<String> = reader.headers()?.iter().map(|h| h.trim().to_owned()).collect();
        let mut out = Vec::new();
        for (i, rec) in reader.records().enumerate() {
            let cells = rec.map_err(|e| anyhow::anyhow!("{at}: row {}: {e}", i + 2))?;
            let obj: serde_json::Map<String, Value> = headers
                .iter()
                .zip(cells.iter())
                .map(|(h, c)| (h.clone(), Value::String(c.trim().to_owned())))
                .collect();
            out.push((None, Value::Object(obj)));
        }
        return Ok(out);
    }
    let records = match shape(text).map_err(|e| anyhow::anyhow!("{at}: {e}"))? {
        Shape::Keyed(records) => return Ok(records.into_iter().map(|(k, v)| (Some(k), v)).collect()),
        Shape::Numbered(records) => records,
    };
    let mut out = Vec::new();
    for (n, r) in records {
        match r {
            Ok(v) if v.is_object() => out.push((None, v)),
            Ok(v) => anyhow::bail!("{at}: record {n} is a JSON {}, not a record", kind(&v)),
            Err(e) => anyhow::bail!("{at}: record {n}: {e}"),
        }
    }
    Ok(out)
}

/// Each record's key: the `key` template over it, else its id in an object keyed by id.
fn keys(
    records: Vec<(Option<String>, Value)>,
    key: Option<&str>,
    path: &Path,
    section: &str,
) -> anyhow::Result<Vec<(String, Value)>> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, (id, r))| {
            let k = match (key, id) {
                (Some(t), _) => {
                    json_template(t, &r).map_err(|e| anyhow::anyhow!("{} record {}: {e}", path.display(), i + 1))?
                }
                (None, Some(id)) => id,
                (None, None) => anyhow::bail!(
                    "{} is not an object keyed by id: say which field keys its records (`[{section}] key = \"{{id}}\"`)",
                    path.display()
                ),
            };
            Ok((k, r))
        })
        .collect()
}

/// A join file's records by key, and the record an unmatched row gets.
pub struct Joined {
    pub records: HashMap<String, Value>,
    pub default: Option<Value>,
}

pub fn load_join(j: &JoinMapping, input_dir: Option<&Path>) -> anyhow::Result<Joined> {
    let path = beside(&j.file, input_dir);
    let records = table(&path).map_err(|e| anyhow::anyhow!("join file {e}"))?;
    let records = keys(records, j.key.as_deref(), &path, "join")?.into_iter().collect();
    let default = j.left.then(|| Value::Object(j.defaults.clone()));
    Ok(Joined { records, default })
}

/// The full set's items in file order, each key once.
pub fn load_full_set(d: &DenominatorMapping, input_dir: Option<&Path>) -> anyhow::Result<Vec<(String, Value)>> {
    let path = beside(&d.file, input_dir);
    let records = table(&path).map_err(|e| anyhow::anyhow!("full-set file {e}"))?;
    let mut items = keys(records, d.key.as_deref(), &path, "denominator")?;
    let mut seen = std::collections::HashSet::new();
    for (k, r) in &mut items {
        if !seen.insert(k.clone()) {
            anyhow::bail!(
                "full-set file {}: the key `{k}` is there twice; a full set names each item once",
                path.display()
            );
        }
        if let Some(o) = r.as_object_mut() {
            o.entry(KEY_FIELD).or_insert_with(|| Value::String(k.clone()));
        }
    }
    anyhow::ensure!(!items.is_empty(), "full-set file {} lists no item", path.display());
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_keyed_by_id_is_records_with_their_key() {
        let r = json_records(r#"{"Chart_1": {"bugId": 1}, "Lang_2": {"bugId": 2, "_key": "own"}}"#).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].1.as_ref().unwrap()["_key"], "Chart_1");
        assert_eq!(r[1].1.as_ref().unwrap()["_key"], "own");
    }

    #[test]
    fn a_keyed_object_keeps_the_files_order_and_its_repeated_keys() {
        let r = json_records(r#"{"Chart_2": {"a": 1}, "Chart_10": {"a": 2}, "Chart_2": {"a": 3}}"#).unwrap();
        let keys: Vec<&str> = r.iter().map(|(_, v)| v.as_ref().unwrap()["_key"].as_str().unwrap()).collect();
        assert_eq!(keys, ["Chart_2", "Chart_10", "Chart_2"], "not sorted, nothing merged");
        assert_eq!(r[2].0, 3, "numbered as the file has them");
    }

    #[test]
    fn pretty_printed_objects_and_lines_are_told_apart() {
        let pretty = "{\n  \"a\": {\"x\": 1},\n  \"b\": {\"x\": 2}\n}\n";
        assert_eq!(json_records(pretty).unwrap().len(), 2);
        assert_eq!(json_records("{\"x\": 1}\n{\"x\": 2}\n").unwrap().len(), 2);
        assert_eq!(json_records("{\"x\": 1}").unwrap().len(), 1, "one record on one line");
        assert_eq!(json_records("[{\"x\": 1}, {\"x\": 2}]").unwrap().len(), 2);
    }

    #[test]
    fn a_wrong_shape_is_one_message() {
        for (text, says) in [
            ("", "empty"),
            ("42", "a JSON number"),
            ("\"x\"", "a JSON string"),
            ("[1, 2", "not a JSON array"),
            ("id,title\n1,a\n", "not JSON (line 1"),
            ("{\"a\": {\"x\": 1},\n oops", "neither one JSON object"),
            ("7\n8\n", "line 1 of the input is a JSON number"),
        ] {
            let e = json_records(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        assert!(check_csv("{\"a\": 1}").unwrap_err().to_string().contains("looks like JSON"));
        assert!(check_csv("id,title\n").is_ok());
    }
}
