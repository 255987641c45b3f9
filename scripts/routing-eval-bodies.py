#!/usr/bin/env python3
"""Builds the truth file of `scripts/routing-eval-bodies.sh` from real reports.

Reads data/routing-eval/*.jsonl (real GitHub issues with bodies and labels of
six frameworks; sources in data/routing-eval/SOURCES.md) and the library bugs
of the real-bug corpus (corpus/realbugs/*.toml), and writes JSON Lines with
`id`, `project`, `url`, `title`, `body`, `harness` and `labels`.

Truth comes from the trackers' labels: build, install, packaging, CI and test
infrastructure, dependency and driver labels are harness; bug labels of
operators and modules (a CUDA label included) are library bugs; platform
labels count for neither. The labels that make the truth are withheld from
the rule (`labels` is written empty), so the rule is measured on what a
report says, as it reads a report filed before anyone labelled it.
"""
import json
import sys
import tomllib
from pathlib import Path

# Per tracker: labels that make a report harness, labels that make it a
# library bug, labels that say it is no bug at all (the report is left out).
TRUTH = {
    "tensorflow/tensorflow": (
        {"type:build/install", "subtype:bazel"},
        {"type:bug", "type:performance", "regression issue"},
        {"type:docs-bug", "type:feature", "type:others", "type:support"},
    ),
    "pytorch/pytorch": (
        {"module: binaries", "module: build", "module: build warnings", "module: ci", "module: dependency bug",
         "module: static linking", "releng", "module: flaky-tests", "module: tests", "module: testing"},
        None,  # any other `module:` or `oncall:` label
        {"OSS contribution wanted", "better-engineering", "enhancement", "feature", "function request",
         "module: doc infra", "module: docs", "module: porting", "module: typing", "proposal accepted"},
    ),
    "apache/mxnet": (
        {"Build", "CI", "CMake", "Docker", "Installation", "pip", "Flaky", "Test", "Disabled test"},
        {"Autograd", "BLAS", "Backend", "Bug", "CUDA", "Converter", "CoreML", "Data-loading", "Distributed", "FP16",
         "Gluon", "KVStore", "MKL", "MKLDNN", "Memory", "Metric", "Module", "NDArray", "Numpy", "ONNX", "Operator",
         "Performance", "Profiler", "Quantization", "RNN", "Sparse", "Symbol", "Thread Safety"},
        {"API change", "Call for Contribution", "Discussion", "Doc", "Feature request", "HowTo", "RFC", "Roadmap",
         "Website"},
    ),
    "scikit-learn/scikit-learn": (
        {"Build / CI", "cython", "module:test-suite"},
        {"Bug", "Numerical Stability", "Performance", "Regression", "float32", "segfault"},
        {"Documentation", "Enhancement", "Needs Decision - Include Feature", "New Feature"},
    ),
    "BVLC/caffe": ({"build", "compatibility"}, {"OpenCL", "bug", "multi-GPU"},
                   {"documentation", "duplicate", "enhancement", "question", "style"}),
    "keras-team/keras": (set(), {"type:bug/performance"}, {"User error", "type:docs", "type:feature", "type:support"}),
}
AMBIGUOUS_PLATFORM = {"module: windows", "module: POWER", "OS:Windows", "arch:arm", "ARM", "OSX", "Ubuntu", "Windows",
                      "mac", "windows", "subtype:windows", "subtype:macOS", "subtype: ubuntu/linux", "wsl2"}


def truth(project, labels):
    harness, library, not_bug = TRUTH[project]
    if any(l in harness for l in labels):
        return True
    if any(l in not_bug for l in labels):
        return None
    if library is None:
        lib = any((l.startswith("module: ") or l.startswith("oncall: ")) and l not in AMBIGUOUS_PLATFORM for l in labels)
    else:
        lib = any(l in library for l in labels)
    return False if lib else None


def main(root, out):
    rows = []
    for path in sorted((root / "data/routing-eval").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            r = json.loads(line)
            project = r["id"].split("#")[0]
            t = truth(project, r["labels"])
            if t is None:
                continue
            rows.append({"id": r["id"], "project": project, "url": r["url"], "title": r["title"],
                         "body": r["body"] or "", "harness": t, "labels": []})
    for path in sorted((root / "corpus/realbugs").glob("*.toml")):
        lib = tomllib.loads(path.read_text())
        project = lib["library"]["tracker"].removeprefix("https://github.com/").removesuffix("/issues")
        for b in lib.get("bug", []):
            rows.append({"id": b["url"].removeprefix("https://github.com/").replace("/issues/", "#"),
                         "project": project, "url": b["url"], "title": b["title"], "body": b.get("body", ""),
                         "harness": False, "labels": []})
    seen = set()
    with open(out, "w") as f:
        for r in rows:
            if r["id"] in seen:
                continue
            seen.add(r["id"])
            f.write(json.dumps(r) + "\n")
    print(f"{len(seen)} reports -> {out}", file=sys.stderr)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
