use super::*;

fn found(body: &str, names: &[&str]) -> Option<(String, How, usize)> {
    version_of(body, names).map(|n| (n.version, n.how, n.line_no))
}

#[test]
fn fields_as_reports_write_them() {
    assert_eq!(found("pandas version: 2.0.0\n", &["pandas"]), Some(("2.0.0".into(), How::Field, 1)));
    assert_eq!(found("Some text\n- numpy: 1.26.0\n", &["numpy"]), Some(("1.26.0".into(), How::Field, 2)));
    assert_eq!(
        found("INSTALLED VERSIONS\n------\npandas           : 2.0.0\nnumpy : 1.24.2\n", &["pandas"]).unwrap().0,
        "2.0.0"
    );
    assert_eq!(found("| scipy | 1.11.1 |\n", &["scipy"]).unwrap().0, "1.11.1");
    assert_eq!(found("jax/jaxlib 0.4.13\n", &["jaxlib"]).unwrap().0, "0.4.13");
    assert_eq!(found("jax/jaxlib 0.4.13\n", &["jax"]).unwrap().0, "0.4.13");
    assert_eq!(found("sklearn: 1.3.0\n", &["scikit-learn", "sklearn"]).unwrap().0, "1.3.0");
}

#[test]
fn freeze_dumps_and_forms() {
    let freeze = "```\nnumpy==1.26.0\nPandas==2.0.0\n```\n";
    assert_eq!(found(freeze, &["pandas"]), Some(("2.0.0".into(), How::Pinned, 3)));
    let form = "### Describe the bug\nIt breaks.\n\n### einops version\n\n0.6.0\n\n### Other\n";
    assert_eq!(found(form, &["einops"]), Some(("0.6.0".into(), How::FormField, 6)));
    let generic = "### Version\n\nv2.1.1\n";
    assert_eq!(found(generic, &["anything"]).unwrap().0, "2.1.1");
}

#[test]
fn printed_versions() {
    let session = ">>> import pandas as pd\n>>> pd.__version__\n'2.0.0'\n";
    assert_eq!(found(session, &["pandas", "pd"]), Some(("2.0.0".into(), How::Printed, 3)));
    assert_eq!(found("print(np.__version__)  # 1.25.0\n", &["numpy", "np"]).unwrap().0, "1.25.0");
    assert_eq!(found("In [2]: np.__version__\nOut[2]: '1.24.1'\n", &["np"]).unwrap().0, "1.24.1");
}

#[test]
fn better_evidence_wins_and_prose_is_not_a_field() {
    let body = "I saw pandas 1.5.3 work fine but after upgrading things broke badly for me today\npandas: 2.0.1\n```\npandas==2.0.0\n```\n";
    assert_eq!(found(body, &["pandas"]), Some(("2.0.0".into(), How::Pinned, 4)));
    assert_eq!(found("We upgraded pandas to 2.0.0 last week and since then this fails\n", &["pandas"]), None);
    assert_eq!(found("date: 2023-04-03\n", &["date"]), None);
    assert_eq!(found("pandas: latest\n", &["pandas"]), None);
    assert_eq!(found("numpy: 1.26.0\n", &["pandas"]), None);
}

#[test]
fn hostile_tokens_are_not_versions() {
    assert_eq!(version_token("1.0;rm -rf /"), None);
    assert_eq!(version_token("$(id).1"), None);
    assert_eq!(version_token("1..2"), None);
    assert_eq!(version_token("2.0.0,"), Some("2.0.0".into()));
    assert_eq!(version_token("v0.4.13"), Some("0.4.13".into()));
    assert_eq!(normalize("Scikit_Learn"), "scikit-learn");
}
