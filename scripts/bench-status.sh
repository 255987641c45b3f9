#!/usr/bin/env bash
# Status page server time (issue 13: under 50 ms on the demo and with 10,000
# reports). For each dataset: the first load after start (the status is
# computed: cold), over RESTARTS restarts; cached loads with wrk for 10 s on
# one connection and on 16; and a load a minute later, when the status is
# stale (served at once while it is recomputed behind). Loopback only.
# Prints figures; asserts nothing.
#
#   scripts/bench-status.sh [REPORTS] [RESTARTS]     default: 10000 5
set -euo pipefail
cd "$(dirname "$0")/.."
reports="${1:-10000}"
restarts="${2:-5}"
command -v wrk > /dev/null || { [ "$(id -u)" = 0 ] && { apt-get install -y -q wrk > /dev/null || { apt-get update -q > /dev/null && apt-get install -y -q wrk > /dev/null; }; }; }
command -v wrk > /dev/null || { echo "wrk is needed (Debian: apt-get install wrk)"; exit 1; }
cargo build --release -q -p failpass
bin=target/release/failpass
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

port=18431
base="http://127.0.0.1:$port"
start() { # data dir, extra args
  "$bin" serve --bind "127.0.0.1:$port" --data-dir "$1" --workers 0 "${@:2}" > "$work/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 200); do curl -fs "$base/healthz" > /dev/null && return; sleep 0.05; done
  echo "failpass did not start:"; cat "$work/log"; exit 1
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""; }
ms() { curl -s -o /dev/null -w '%{time_total}' "$1" | awk '{printf "%.1f", $1 * 1000}'; }

measure() { # label, data dir, project, extra args
  local cold=()
  for _ in $(seq 1 "$restarts"); do
    start "$2" "${@:4}"
    cold+=("$(ms "$base/status/$3")")
    stop
  done
  start "$2" "${@:4}"
  ms "$base/status/$3" > /dev/null
  local one sixteen
  one=$(wrk -t1 -c1 -d10s --latency "$base/status/$3" | awk '/50%/{p50=$2} /99%/{p99=$2} /Requests\/sec/{rps=$2} END{print p50" p50, "p99" p99, "rps" req/s"}')
  sixteen=$(wrk -t2 -c16 -d10s --latency "$base/status/$3" | awk '/50%/{p50=$2} /99%/{p99=$2} /Requests\/sec/{rps=$2} END{print p50" p50, "p99" p99, "rps" req/s"}')
  # A minute on, the status is stale: served at once, recomputed behind.
  sleep 61
  local stale fresh
  stale=$(ms "$base/status/$3")
  sleep 2
  fresh=$(ms "$base/status/$3")
  stop
  printf '%s\n  first load right after start (waits for the start-up computation), %s restarts: %s ms\n  cached, 1 connection:   %s\n  cached, 16 connections: %s\n  a minute on: %s ms (stale served, recomputed behind), then %s ms\n' \
    "$1" "$restarts" "${cold[*]}" "$one" "$sixteen" "$stale" "$fresh"
}

mkdir -p "$work/demo"
measure "demo (pytorch/pytorch)" "$work/demo" pytorch/pytorch --demo

python3 scripts/gen_attempts.py $((reports * 3)) "$reports" > "$work/big.ndjson"
mkdir -p "$work/big"
"$bin" import --format ndjson --data-dir "$work/big" "$work/big.ndjson" > /dev/null
measure "$reports reports, $((reports * 3)) attempts (bench/lib)" "$work/big" bench/lib
