#!/usr/bin/env bash
# The routing rule measured on real report bodies (issue 33): real GitHub
# issues of TensorFlow, PyTorch, MXNet, scikit-learn, Caffe and Keras with
# their bodies and labels (data/routing-eval, sources in its SOURCES.md),
# and the library bugs of the real-bug corpus (corpus/realbugs).
#
# Truth is the trackers' labels (scripts/routing-eval-bodies.py says which):
# build, install, packaging, CI and test infrastructure and dependency labels
# are harness; bug labels of operators and modules (CUDA included) are
# library bugs; platform labels count for neither. The rule reads the title
# and the body only: the labels that make the truth are withheld from it.
#
# The split is fixed by `failpass routing eval` (FNV-1a of the id): each
# project's boilerplate and the classifier learn from `train`, the figures
# are on `measure`.
#
#   scripts/routing-eval-bodies.sh [--split measure|train|all] [--errors]
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/routing
truth=target/routing/bodies-truth.jsonl
python3 scripts/routing-eval-bodies.py . "$truth"
cargo build --release -q -p failpass
target/release/failpass routing eval --truth "$truth" --fields title,body "$@"
