#!/usr/bin/env bash
# Dashboard budgets (issue 5): the whole app's wasm + JS gzipped (budget
# 300 KB = 307,200 B) and the Overview visible after navigation on localhost
# (budget 500 ms). Prints figures; fails on nothing (these machines are noisy).
#
#   scripts/bench-dashboard.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-20}"

line=$(cargo xtask frontend 2>&1 | grep '^dashboard built' | tail -1)
echo "$line"
total=$(sed -E 's/.*wasm\+js ([0-9]+) B gzip.*/\1/' <<<"$line")
budget=307200
echo "bundle: wasm+js ${total} B gzip against a budget of ${budget} B ($(( total * 100 / budget ))% of it)"

CHROMEDRIVER="${CHROMEDRIVER:-/usr/bin/chromedriver}" CHROMIUM="${CHROMIUM:-/usr/bin/chromium}" \
  cargo run --quiet --release -p failpass-e2e --example overview_timing "$runs"
