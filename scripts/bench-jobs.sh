#!/usr/bin/env bash
# Verification jobs per minute with 1, 2 and 4 `failpass worker` processes
# sharing one PostgreSQL database. Each job grades one candidate for real:
# python3 -m py_compile, one run on buggy, one on fixed (three Python starts).
# Prints figures; asserts nothing.
#   scripts/bench-jobs.sh [JOBS] [WORKER_COUNTS...]     default: 120 1 2 4
# PostgreSQL: $BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${1:-120}
shift || true
counts=("${@:-1 2 4}")
read -r -a counts <<< "${counts[*]}"
admin=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
cargo build --release -q -p failpass
bin=$PWD/target/release/failpass
work=$(mktemp -d)
chmod 755 "$work"  # candidates run as nobody when this runs as root
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
python3 - "$jobs" > "$work/jobs.ndjson" <<'PY'
import json, sys
n = int(sys.argv[1])
print(json.dumps({"kind": "project", "slug": "bench/jobs"}))
for name, role in (("old", "buggy"), ("new", "fixed")):
    print(json.dumps({"kind": "environment", "project": "bench/jobs", "name": name, "role": role, "recipe": {"env": {"MODE": role}}}))
print(json.dumps({"kind": "report", "project": "bench/jobs", "external_id": "1", "title": "mode bug",
                  "oracle": {"kind": "fail_to_pass", "source": "authored", "command": "python3 candidate.py"}}))
for i in range(n):
    print(json.dumps({"kind": "attempt", "report": {"project": "bench/jobs", "external_id": "1"}, "agent": "bench", "attempt_key": str(i),
                      "verdict": "hypothesis", "verdict_source": "llm", "verify": True,
                      "candidate": f"import os\n# candidate {i}\nraise SystemExit(1 if os.environ['MODE'] == 'buggy' else 0)\n"}))
PY
printf '%-8s %6s %10s %12s %10s\n' workers jobs seconds jobs/min reproduced
for k in "${counts[@]}"; do
  db="failpass_bench_jobs_$$_$k"
  psql "$admin" -qc "CREATE DATABASE $db" >/dev/null
  url="${admin%/*}/$db"
  "$bin" import --format ndjson --database-url "$url" "$work/jobs.ndjson" > /dev/null
  start=$(date +%s.%N)
  pids=()
  for i in $(seq 1 "$k"); do
    "$bin" worker --database-url "$url" --data-dir "$work/data" > /dev/null 2>&1 &
    pids+=($!)
  done
  while :; do
    left=$(psql "$url" -tAc "SELECT COUNT(*) FROM jobs WHERE status IN ('queued', 'running')")
    [ "$left" = 0 ] && break
    sleep 0.2
  done
  end=$(date +%s.%N)
  for p in "${pids[@]}"; do kill "$p"; wait "$p" 2>/dev/null || true; done
  pids=()
  done_jobs=$(psql "$url" -tAc "SELECT COUNT(*) FROM jobs WHERE status = 'done'")
  repro=$(psql "$url" -tAc "SELECT COUNT(*) FROM attempts WHERE verdict = 'reproduced'")
  secs=$(echo "$end - $start" | bc -l)
  printf '%-8s %6s %10.2f %12.0f %10s\n' "$k" "$done_jobs" "$secs" "$(echo "$done_jobs * 60 / $secs" | bc -l)" "$repro"
  psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null
done
echo "(2 cores; each job: py_compile + one buggy and one fixed run in the sandbox)"
