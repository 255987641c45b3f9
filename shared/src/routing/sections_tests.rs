use super::*;

/// TensorFlow's bug form, every environment field filled, a silent
/// numerical bug in the description.
pub(crate) const TF_FORM_NUMERICAL: &str = "### Issue type\n\nBug\n\n### Have you reproduced the bug with TensorFlow Nightly?\n\nYes\n\n### Source\n\nbinary\n\n### TensorFlow version\n\ntf 2.15.0\n\n### Custom code\n\nYes\n\n### OS platform and distribution\n\nLinux Ubuntu 22.04\n\n### Mobile device\n\n_No response_\n\n### Python version\n\n3.11\n\n### Bazel version\n\n6.1.0\n\n### GCC/compiler version\n\ngcc 11.4\n\n### CUDA/cuDNN version\n\nCUDA 12.2 / cuDNN 8.9\n\n### GPU model and memory\n\nNVIDIA A100 40GB\n\n### Current behavior?\n\n`tf.math.reduce_logsumexp` returns `inf` for large finite inputs; the expected result is 1000.6931.\n\n### Standalone code to reproduce the issue\n\n```shell\nimport tensorflow as tf\nx = tf.constant([1000.0, 1000.0])\nprint(tf.math.reduce_logsumexp(x).numpy())\n# expected 1000.6931, got inf\n```\n\n### Relevant log output\n\n```shell\ninf\n```\n";

/// PyTorch's bug template with its `collect_env` dump.
pub(crate) const TORCH_COLLECT_ENV: &str = "### 🐛 Describe the bug\n\n`torch.cumsum` on a float16 tensor gives the wrong sum on CPU.\n\n```python\nimport torch\nx = torch.ones(4096, dtype=torch.float16)\nprint(x.cumsum(0)[-1])  # 2048., expected 4096.\n```\n\n### Versions\n\nCollecting environment information...\nPyTorch version: 2.1.0+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\nOS: Ubuntu 22.04.3 LTS (x86_64)\nGCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0\nClang version: Could not collect\nCMake version: version 3.27.7\nLibc version: glibc-2.35\nPython version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)\nIs CUDA available: True\nNvidia driver version: 535.104.05\ncuDNN version: Probably one of the following: /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0\n\nVersions of relevant libraries:\n[pip3] numpy==1.24.4\n[pip3] torch==2.1.0\n[conda] Could not collect\n";

#[test]
fn headings_of_issue_forms_and_markdown_templates_are_read() {
    assert_eq!(heading("### Current behavior?").as_deref(), Some("Current behavior?"));
    assert_eq!(heading("**Describe the bug**").as_deref(), Some("Describe the bug"));
    assert_eq!(heading("**System information**:").as_deref(), Some("System information"));
    assert_eq!(heading("#123 is the same bug"), None);
    assert_eq!(heading("**Note** that the sum is wrong"), None);
    assert_eq!(heading_kind("Bazel version"), Kind::Environment);
    assert_eq!(heading_kind("GCC/compiler version"), Kind::Environment);
    assert_eq!(heading_kind("OS platform and distribution"), Kind::Environment);
    assert_eq!(heading_kind("Source"), Kind::Environment);
    assert_eq!(heading_kind("Environment details"), Kind::Environment);
    assert_eq!(heading_kind("System information"), Kind::Environment);
    assert_eq!(heading_kind("Issue type"), Kind::Form);
    assert_eq!(heading_kind("Have you reproduced the bug with TensorFlow Nightly?"), Kind::Form);
    assert_eq!(heading_kind("Current behavior?"), Kind::Problem);
    assert_eq!(heading_kind("Standalone code to reproduce the issue"), Kind::Problem);
    assert_eq!(heading_kind("Relevant log output"), Kind::Problem);
    assert_eq!(heading_kind("Steps/Code to Reproduce"), Kind::Problem);
}

#[test]
fn a_filled_form_keeps_only_the_problem_as_evidence() {
    let r = read(TF_FORM_NUMERICAL, &Boilerplate::default());
    let prose = r.prose().to_lowercase();
    for env in ["bazel", "gcc", "cuda", "ubuntu", "binary", "a100"] {
        assert!(!prose.contains(env), "{env} left in the prose: {prose}");
        assert!(r.environment.to_lowercase().contains(env), "{env} not in the environment");
    }
    assert!(prose.contains("reduce_logsumexp"));
    assert!(r.code().contains("tf.constant"));
    assert_eq!(
        r.sections.iter().filter_map(|s| s.heading.as_deref()).collect::<Vec<_>>(),
        ["Current behavior?", "Standalone code to reproduce the issue", "Relevant log output"]
    );
    assert!(r.set_aside.iter().any(|h| h == "Bazel version"));
}

#[test]
fn environment_dumps_are_environment_wherever_they_stand() {
    let r = read(TORCH_COLLECT_ENV, &Boilerplate::default());
    assert!(r.environment.contains("CUDA used to build PyTorch"));
    assert!(!r.prose().contains("CUDA") && !r.code().contains("GCC"));
    assert!(r.code().contains("cumsum"));
    // A fenced pip freeze in the description, and an unfenced run of fields.
    let body = "The mean is wrong.\n\n```\nnumpy==1.26.4\npandas==2.0.0\nscipy==1.11.1\n```\n\n- OS: Windows 11\n- Python version: 3.11.4\n";
    let r = read(body, &Boilerplate::default());
    assert_eq!(r.prose().trim(), "The mean is wrong.");
    assert!(r.environment.contains("pandas==2.0.0") && r.environment.contains("Windows 11"));
    assert!(r.code().is_empty());
    // One field alone is prose; a traceback is never a dump.
    let r = read("Python: the slice below returns a view\n", &Boilerplate::default());
    assert!(r.prose().contains("slice"));
    assert!(!is_env_dump(
        "Traceback (most recent call last):\n  File \"x\", line 1\nImportError: libcudart.so.12: cannot open shared object file"
    ));
    assert!(is_env_dump("+----+\n| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |\n"));
    // A reproduction that prints the devices is code, not a dump.
    assert!(!is_env_dump("import jax\nprint(jax.devices())\nx = jax.numpy.ones(3)\nprint(jax.grad(f)(x))\n"));
}

#[test]
fn boilerplate_lines_are_left_out_and_short_answers_never_are() {
    let b = Boilerplate::new(["- [x] I have searched the existing issues".to_owned(), "Yes".to_owned()]);
    assert_eq!(b.len(), 1);
    let r = read("- [ ] I have searched the existing issues\nYes\nThe build of the docs fails\n", &b);
    assert_eq!(r.boilerplate_lines, 1);
    assert_eq!(r.prose(), "Yes\nThe build of the docs fails\n");
}

#[test]
fn boilerplate_is_what_a_share_of_the_reports_carry() {
    let template = "### Describe the bug\nA clear and concise description of what the bug is.\n";
    let mut bodies: Vec<String> = (0..8)
        .map(|i| format!("{template}The mean of column {i} is wrong\n```\nprint(df.mean())  # shared code line\n```\n"))
        .collect();
    bodies.push("Sent from my laptop at the office\nThe build fails\n".into());
    bodies.push("Sent from my laptop at the office\nA second body\n".into());
    let refs: Vec<&str> = bodies.iter().map(String::as_str).collect();
    let learned = learn(&refs, 10, 0.25);
    let lines: Vec<&str> = learned.iter().map(|l| l.line.as_str()).collect();
    assert_eq!(lines, ["### Describe the bug", "A clear and concise description of what the bug is."]);
    assert_eq!(learned[0].reports, 8);
    // Too few reports: nothing is learned.
    assert!(learn(&refs[..9], 10, 0.25).is_empty());
    let b = Boilerplate::new(learned.into_iter().map(|l| l.line));
    let r = read(&bodies[0], &b);
    assert_eq!(r.prose().trim(), "The mean of column 0 is wrong");
}

#[test]
fn stated_results_are_never_environment_and_versions_are_read_as_envinfo_reads_them() {
    let r = read("The sum is wrong.\nExpected: 1.5\nGot: 2.5\n", &Boilerplate::default());
    assert!(r.prose().contains("Expected: 1.5") && r.environment.is_empty(), "{r:?}");
    assert!(env_line("| pandas | 2.0.0 |") && env_line("numpy==1.26.4") && env_line("jax/jaxlib 0.4.13"));
    assert!(env_line("- Python version: 3.11") && env_line("OS: Ubuntu 22.04"));
    assert!(!env_line("Note: the value is wrong") && !env_line("This happens since 2.0 was released"));
}
