//! One input record as the mapping reads it: a CSV row or a JSON object,
//! with the record a join found for it; templates, column lookups and lists.

use super::{ListSpec, Pattern, Value};

/// One input record: a CSV row, or a JSON object whose fields are the columns.
pub(super) struct Row<'a> {
    pub source: Source<'a>,
    pub joined: Option<&'a serde_json::Value>,
}

pub(super) enum Source<'a> {
    Csv { headers: &'a [String], cells: &'a csv::StringRecord },
    Json(&'a serde_json::Value),
}

/// A field of a JSON object by name, or by path: `issue.url`, `a.b[0].c`
/// (a name holding dots is found as it is first).
pub fn json_path<'v>(obj: &'v serde_json::Value, path: &str) -> Option<&'v serde_json::Value> {
    if let Some(v) = obj.get(path) {
        return Some(v);
    }
    let mut here = obj;
    for part in path.split('.') {
        let (name, indexes) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            here = here.get(name)?;
        }
        for ix in indexes.split('[').skip(1) {
            here = here.get(ix.strip_suffix(']')?.parse::<usize>().ok()?)?;
        }
    }
    Some(here)
}

/// A JSON field as text: strings as they are, numbers and booleans printed.
pub(super) fn json_text(v: &serde_json::Value) -> Option<String> {
    match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Number(n) => Some(n.to_string()),
        serde_json::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// `{field}` templates over one JSON object (a joined record or a list item).
pub(super) fn json_template(t: &str, obj: &serde_json::Value) -> Result<String, String> {
    let mut out = String::with_capacity(t.len());
    let mut rest = t;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').ok_or_else(|| format!("unclosed `{{` in template `{t}`"))? + start;
        let field = &rest[start + 1..end];
        // `{}` is the item itself (a list of plain strings).
        let found = if field.is_empty() { Some(obj) } else { json_path(obj, field) };
        match found {
            None => return Err(format!("no field `{field}`")),
            Some(serde_json::Value::Null) => {}
            Some(v) => out.push_str(&json_text(v).ok_or_else(|| format!("field `{field}` is not text or a number"))?),
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Row<'_> {
    pub fn get(&self, column: &str) -> Result<String, String> {
        if let Some(field) = column.strip_prefix("join.") {
            let rec = self.joined.ok_or_else(|| "no joined record for this row".to_owned())?;
            return json_path(rec, field)
                .and_then(json_text)
                .ok_or_else(|| format!("joined record has no field `{field}`"));
        }
        match &self.source {
            Source::Csv { headers, cells } => {
                let i = headers.iter().position(|h| h == column).ok_or_else(|| format!("no column `{column}`"))?;
                Ok(cells.get(i).unwrap_or_default().trim().to_owned())
            }
            Source::Json(obj) => match json_path(obj, column) {
                None => Err(format!("no field `{column}`")),
                Some(serde_json::Value::Null) => Ok(String::new()),
                Some(v) => json_text(v).ok_or_else(|| format!("field `{column}` is not text or a number")),
            },
        }
    }

    /// A list field as text items: strings, or objects' `name` (GitHub's
    /// labels); `None` when the field is not a list.
    pub fn list(&self, field: &str) -> Option<Vec<String>> {
        let v = match (field.strip_prefix("join."), &self.source) {
            (Some(f), _) => json_path(self.joined?, f)?,
            (None, Source::Json(obj)) => json_path(obj, field)?,
            (None, Source::Csv { .. }) => return None,
        };
        let items = v.as_array()?;
        Some(items.iter().filter_map(|i| json_text(i).or_else(|| i.get("name").and_then(json_text))).collect())
    }

    pub fn template(&self, t: &str) -> Result<String, String> {
        let mut out = String::with_capacity(t.len());
        let mut rest = t;
        while let Some(start) = rest.find('{') {
            out.push_str(&rest[..start]);
            let end = rest[start..].find('}').ok_or_else(|| format!("unclosed `{{` in template `{t}`"))? + start;
            out.push_str(&self.get(&rest[start + 1..end])?);
            rest = &rest[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    pub fn value(&self, v: &Value) -> Result<String, String> {
        match v {
            Value::Template(t) => self.template(t),
            Value::Column { column, regex, map, scale } => {
                let mut raw = self.get(column)?;
                if let Some(Pattern(re)) = regex {
                    let caps = re
                        .captures(&raw)
                        .ok_or_else(|| format!("{column}: `{raw}` does not match `{}`", re.as_str()))?;
                    raw = caps.get(1).or_else(|| caps.get(0)).map(|m| m.as_str().to_owned()).unwrap_or_default();
                }
                // `"*"` in a map stands for any other value.
                let mapped = if map.is_empty() {
                    raw
                } else {
                    // `{}` in a mapped value is the value itself (`"*" = "{}"` keeps the rest as they are).
                    map.get(&raw)
                        .or_else(|| map.get("*"))
                        .map(|m| m.replace("{}", &raw))
                        .ok_or_else(|| format!("{column}: `{raw}` is none of {:?}", map.keys().collect::<Vec<_>>()))?
                };
                match scale {
                    None => Ok(mapped),
                    Some(s) => {
                        let n: f64 = mapped.parse().map_err(|_| format!("{column}: `{mapped}` is not a number"))?;
                        Ok((n * s).to_string())
                    }
                }
            }
        }
    }
}

/// One line per item of a list: the row's own field (JSON input), else the
/// joined record's (`join.` names the joined record only).
pub(super) fn list_lines(spec: &ListSpec, row: &Row<'_>, what: &str) -> Result<Vec<String>, (String, String)> {
    let (field, own) = match spec.list.strip_prefix("join.") {
        Some(f) => (f, None),
        None => (
            spec.list.as_str(),
            match &row.source {
                Source::Json(obj) => json_path(obj, &spec.list),
                Source::Csv { .. } => None,
            },
        ),
    };
    let items = own
        .or_else(|| row.joined.and_then(|j| json_path(j, field)))
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| {
            let message = match (row.joined.is_some(), spec.list.starts_with("join."), &row.source) {
                (true, true, _) => format!("the joined record has no list `{field}`"),
                (true, false, _) => format!("neither the row nor its joined record has a list `{field}`"),
                (false, _, Source::Csv { .. }) => {
                    format!("a CSV cell is not a list, and no join gives a list `{field}`")
                }
                (false, _, Source::Json(_)) => format!("the row has no list `{field}`"),
            };
            (what.to_owned(), message)
        })?;
    items.iter().map(|item| json_template(&spec.item, item).map_err(|e| (what.to_owned(), e))).collect()
}
