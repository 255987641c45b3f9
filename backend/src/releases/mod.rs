//! Real releases of a project's package: the template that builds any of
//! them, the index's list of them, and a version (from a report, a
//! maintainer or a bisect) turned into the recipe of one release, only after
//! it is checked against that list and parsed as a PEP 440 version.

pub mod index;
pub mod wheels;

use std::str::FromStr;

use chrono::{DateTime, Utc};
use failpass_shared::api::query::FieldError;
use failpass_shared::api::releases::ReleaseTemplate;
use pep440_rs::Version;
use serde::Serialize;

use index::{Listing, PackageIndex};

/// Where releases come from and how much the environment cache may hold:
/// `--package-index` and `--env-cache-gb`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub index_url: String,
    pub cache_cap_bytes: Option<u64>,
}

impl Default for Settings {
    fn default() -> Self {
        Self { index_url: index::DEFAULT_INDEX.to_owned(), cache_cap_bytes: None }
    }
}

impl Settings {
    /// The index client, keeping its last listings under `<data>/index`.
    pub fn index(&self, data_dir: &std::path::Path) -> PackageIndex {
        PackageIndex::new(&self.index_url, Some(data_dir.join("index")))
    }

    /// The built-in workers' environment cache (`<data>/envs`), with its cap.
    pub fn env_cache(&self, data_dir: &std::path::Path) -> crate::runner::env::EnvCache {
        let mut cache = crate::runner::env::EnvCache::new(data_dir.join("envs"));
        cache.cap_bytes = self.cache_cap_bytes;
        cache
    }
}

/// Checks a template: a package name, requirement lines that are names and
/// specifiers only (no URLs, no options), or setup commands; `{version}` in
/// at least one of them.
pub fn validate_template(t: &ReleaseTemplate) -> Result<(), FieldError> {
    let package = failpass_shared::envinfo::normalize(&t.package);
    if package.is_empty() || package.len() > 100 || !package.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(FieldError::new("package", "must be a package name on the index (letters, digits, `-`, `_`, `.`)"));
    }
    match (t.requirements.is_empty(), t.setup.is_empty()) {
        (true, true) => {
            return Err(FieldError::new("requirements", "give requirement lines (or setup commands) with {version}"));
        }
        (false, false) => return Err(FieldError::new("setup", "give requirement lines or setup commands, not both")),
        _ => {}
    }
    if t.requirements.len() > 50 || t.setup.len() > 50 || t.aliases.len() > 20 {
        return Err(FieldError::new("requirements", "at most 50 lines, 50 commands and 20 aliases"));
    }
    for line in &t.requirements {
        let sample = line.replace("{version}", "1.0");
        if line.trim_start().starts_with('-') {
            return Err(FieldError::new(
                "requirements",
                format!("`{line}`: options are not allowed, only requirements"),
            ));
        }
        match pep508_rs::Requirement::<pep508_rs::VerbatimUrl>::from_str(&sample) {
            Ok(r) if matches!(r.version_or_url, Some(pep508_rs::VersionOrUrl::Url(_))) => {
                return Err(FieldError::new(
                    "requirements",
                    format!("`{line}`: URLs are not allowed; name a package on the index"),
                ));
            }
            Ok(_) => {}
            Err(e) => return Err(FieldError::new("requirements", format!("`{line}` is not a requirement: {e}"))),
        }
    }
    if t.setup.iter().any(|c| c.trim().is_empty() || c.contains('\0')) {
        return Err(FieldError::new("setup", "holds an empty command or a NUL byte"));
    }
    if !t.requirements.iter().chain(&t.setup).any(|l| l.contains("{version}")) {
        return Err(FieldError::new("requirements", "no line holds {version}"));
    }
    let module_ok = |m: &str| {
        !m.is_empty()
            && m.split('.').all(|p| {
                p.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    };
    if !module_ok(&t.module()) {
        return Err(FieldError::new("import_name", format!("`{}` is not a module name", t.module())));
    }
    if t.aliases
        .iter()
        .any(|a| a.is_empty() || a.len() > 64 || !a.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
    {
        return Err(FieldError::new("aliases", "aliases are names: letters, digits, `-`, `_`, `.`"));
    }
    Ok(())
}

/// One release's recipe: what the environment cache builds. Its hash is the
/// cache key, so two reports on one release share one environment.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedRelease {
    /// `pandas 2.0.0`.
    pub label: String,
    pub version: String,
    /// Requirement lines with the version in place (empty for setup commands).
    pub requirements: Vec<String>,
    pub setup: Vec<String>,
    /// Dependencies resolve as of this instant (the release's last upload and a day).
    pub exclude_newer: Option<DateTime<Utc>>,
    /// The module a built environment must import.
    pub module: String,
    pub index_url: String,
}

impl ResolvedRelease {
    pub fn hash(&self) -> String {
        failpass_shared::hash::content_hash(self)
    }
}

/// Turns `asked` (hostile: read from a report, typed by someone) into a
/// release's recipe, or says why it cannot be built.
pub fn resolve(
    t: &ReleaseTemplate,
    listing: &Listing,
    asked: &str,
    index_url: &str,
) -> Result<ResolvedRelease, String> {
    let asked = asked.trim();
    let shown: String = asked.chars().take(40).collect();
    let wanted = Version::from_str(asked).map_err(|_| format!("`{shown}` is not a PEP 440 version"))?;
    let release = listing.releases.iter().find(|r| r.version().as_ref() == Some(&wanted)).ok_or_else(|| {
        let newest = listing.releases.iter().find(|r| !r.info.prerelease).map(|r| r.info.version.as_str());
        format!(
            "`{shown}` is not a release of {} on the index{}",
            listing.package,
            newest.map(|n| format!(" (its newest is {n})")).unwrap_or_default()
        )
    })?;
    if !release.info.buildable {
        return Err(format!(
            "{} {} cannot be built here: {}",
            listing.package,
            release.info.version,
            release.info.reason.as_deref().unwrap_or("no reason given")
        ));
    }
    let version = release.info.version.clone();
    // The index's own spelling, and still only characters a version has.
    if !version.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_')) {
        return Err(format!("the index spells the release `{version}`, which is not used in a command"));
    }
    let put = |l: &String| l.replace("{version}", &version);
    Ok(ResolvedRelease {
        label: format!("{} {version}", t.package),
        requirements: t.requirements.iter().map(put).collect(),
        setup: t.setup.iter().map(put).collect(),
        exclude_newer: release.last_upload.map(|d| d + chrono::Duration::days(1)),
        module: t.module(),
        index_url: index_url.to_owned(),
        version,
    })
}

/// The buildable releases from `from` (inclusive) to the newest stable one,
/// oldest first: what a bisect searches. Pre-releases are left out unless
/// `from` is one.
/// The newest release an environment can be built for (not yanked, not a
/// pre-release): what scheduled re-checks run on.
pub fn newest(listing: &Listing) -> Option<String> {
    listing
        .releases
        .iter()
        .filter(|r| r.info.buildable && !r.info.yanked)
        .filter_map(|r| r.version().map(|v| (v, &r.info.version)))
        .filter(|(v, _)| !v.any_prerelease())
        .max_by(|a, b| a.0.cmp(&b.0))
        .map(|(_, s)| s.clone())
}

pub fn releases_from(listing: &Listing, from: &str) -> Result<Vec<String>, String> {
    let start = Version::from_str(from.trim()).map_err(|_| format!("`{from}` is not a PEP 440 version"))?;
    let mut out: Vec<(Version, String)> = listing
        .releases
        .iter()
        .filter(|r| r.info.buildable && !r.info.yanked)
        .filter_map(|r| r.version().map(|v| (v, r.info.version.clone())))
        .filter(|(v, _)| *v >= start && (!v.any_prerelease() || *v == start))
        .collect();
    out.sort();
    Ok(out.into_iter().map(|(_, s)| s).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use failpass_shared::api::releases::ReleaseInfo;
    use index::Release;

    fn listing(versions: &[(&str, bool)]) -> Listing {
        Listing {
            package: "einops".into(),
            releases: versions
                .iter()
                .map(|(v, ok)| Release {
                    info: ReleaseInfo {
                        version: (*v).into(),
                        published: None,
                        prerelease: v.contains("rc"),
                        yanked: false,
                        buildable: *ok,
                        reason: (!ok).then(|| "only a source distribution".into()),
                    },
                    last_upload: Some("2022-10-11T08:00:00Z".parse().unwrap()),
                })
                .collect(),
            listed_at: Utc::now(),
            stale: None,
        }
    }

    fn template() -> ReleaseTemplate {
        ReleaseTemplate {
            package: "einops".into(),
            import_name: None,
            requirements: vec!["einops=={version}".into(), "numpy<2".into()],
            setup: vec![],
            aliases: vec![],
        }
    }

    #[test]
    fn a_version_is_substituted_only_when_the_index_has_it() {
        let l = listing(&[("0.7.0rc1", true), ("0.6.0", true), ("0.5.0", false)]);
        let r = resolve(&template(), &l, "0.6", "https://pypi.org/simple").unwrap();
        assert_eq!(r.requirements, ["einops==0.6.0", "numpy<2"]);
        assert_eq!(r.exclude_newer.unwrap().to_rfc3339(), "2022-10-12T08:00:00+00:00");
        assert_eq!(r.label, "einops 0.6.0");
        let e = resolve(&template(), &l, "0.6.1", "x").unwrap_err();
        assert!(e.contains("not a release of einops") && e.contains("newest is 0.6.0"), "{e}");
        assert!(resolve(&template(), &l, "0.6.0; rm -rf /", "x").unwrap_err().contains("not a PEP 440 version"));
        assert!(resolve(&template(), &l, "$(id)", "x").unwrap_err().contains("not a PEP 440 version"));
        assert!(resolve(&template(), &l, "0.5.0", "x").unwrap_err().contains("source distribution"));
        assert_eq!(releases_from(&l, "0.5.0").unwrap(), ["0.6.0"]);
    }

    #[test]
    fn templates_are_requirements_not_commands() {
        assert!(validate_template(&template()).is_ok());
        let bad = |f: &dyn Fn(&mut ReleaseTemplate)| {
            let mut t = template();
            f(&mut t);
            validate_template(&t).unwrap_err().to_string()
        };
        assert!(bad(&|t| t.requirements = vec!["-e git+https://x/y".into()]).contains("options"));
        assert!(bad(&|t| t.requirements = vec!["einops @ https://evil/x.whl".into()]).contains("URLs"));
        assert!(bad(&|t| t.requirements = vec!["einops=={version}; rm -rf /".into()]).contains("not a requirement"));
        assert!(bad(&|t| t.requirements = vec!["einops".into()]).contains("{version}"));
        assert!(bad(&|t| t.package = "../etc".into()).contains("package"));
        assert!(bad(&|t| t.import_name = Some("os;x".into())).contains("module"));
        assert!(bad(&|t| t.setup = vec!["make {version}".into()]).contains("not both"));
    }
}
