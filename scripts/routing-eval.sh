#!/usr/bin/env bash
# The routing rule measured on labelled real data (issue 14): the 750
# bug-fixing pull requests of PyTorch, MXNet and DL4J in
# ../shared/data/real/dlfw_bugs_pytorch_mxnet_dl4j.csv ("Toward Understanding
# Deep Learning Framework Bugs", Chen et al.), turned into a truth file.
#
# Truth (the MANIFEST's harness/plumbing proxy, not a column of the file):
# stage == install, or component == Environment, or root cause Environment
# Incompatibility or Dependent Module Issue: 169 harness, 581 library logic.
# A pull request has a title and the files its fix changed, no body and no
# labels; the files are reported as a second figure, since a bug report does
# not know the fix's files.
#
# The split is fixed by `failpass routing eval` (FNV-1a of the id): the
# classifier trains on `train`, the figures are on `measure`.
#
#   scripts/routing-eval.sh [--split measure|train|all] [--errors]
set -euo pipefail
cd "$(dirname "$0")/.."
data="${FAILPASS_REAL_DATA:-../shared/data/real}/dlfw_bugs_pytorch_mxnet_dl4j.csv"
[ -f "$data" ] || { echo "no $data (set FAILPASS_REAL_DATA to the folder holding it)"; exit 1; }
mkdir -p target/routing
truth=target/routing/dlfw-truth.csv
python3 - "$data" "$truth" <<'PY'
import csv, sys
src, dst = sys.argv[1], sys.argv[2]
harness_causes = {"Environment Incompatibility", "Dependent Module Issue"}
with open(src, newline="") as f, open(dst, "w", newline="") as g:
    w = csv.writer(g)
    w.writerow(["id", "group", "project", "title", "paths", "harness"])
    seen = {}
    for r in csv.DictReader(f):
        # Seven pull requests are listed twice (two bugs): one group, two ids.
        group = f'{r["project"]}/{r["pr_id"]}'
        seen[group] = seen.get(group, 0) + 1
        rid = group if seen[group] == 1 else f"{group}#{seen[group]}"
        harness = r["stage"] == "install" or r["component"] == "Environment" or r["root_cause"] in harness_causes
        # patch_file: one "path+added-removed" per line
        paths = [line.rsplit("+", 1)[0].strip() for line in r["patch_file"].splitlines() if line.strip()]
        w.writerow([rid, group, r["project"], r["title"], ";".join(paths), "true" if harness else "false"])
PY
cargo build --release -q -p failpass
for fields in title title,paths; do
  echo "################ fields: $fields"
  target/release/failpass routing eval --truth "$truth" --fields "$fields" "$@"
  echo
done
