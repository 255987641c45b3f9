#!/usr/bin/env bash
# Speed at scale (issue 16). For each engine, against one database that
# `failpass demo` fills with REPORTS reports and ATTEMPTS attempts (kept in
# target/bench-scale and reused; PostgreSQL's in a database of its own),
# served by the release binary with `--workers 0`, as an anonymous visitor:
#   - p50 and p99 (of RUNS calls, after one warm-up) for every endpoint the
#     Overview, Cost & time, Regimes, Oracles, the queue and the status pages call;
#   - the same route aggregate as raw SQL through `sqlite3` / `psql`;
#   - a static file of the server (the one closest in size to the route
#     figures' response), timed alike: the practical limit;
#   - the ratios; server RSS at rest and under load;
#   - 30 s of wrk at 32 connections against the Overview's calls;
#   - live writes (scripts/bench-writes.sh): agents posting attempts through
#     the API with a token, at 64 and 256 connections, spread over 43 of a
#     project's reports and all on one, on a copy of the database (so the
#     read figures of the next run see the same data);
#   - the bulk NDJSON import of scripts/gen_attempts.py ATTEMPTS into an empty
#     database (IMPORT=0 skips it): records/s and peak RSS.
# Loopback only. Prints figures; asserts nothing (these machines are noisy).
#
#   scripts/bench-scale.sh [REPORTS] [ATTEMPTS] [ENGINES]
#   default: 100000 1000000 "sqlite postgres"; RUNS=20, WRK_SECONDS=30,
#   WRITE_SECONDS=20, CONNECTIONS="64 256", IMPORT=1
set -euo pipefail
cd "$(dirname "$0")/.."
reports="${1:-100000}"
attempts="${2:-1000000}"
engines="${3:-sqlite postgres}"
runs="${RUNS:-20}"
wrk_seconds="${WRK_SECONDS:-30}"
pg_admin="${PG_ADMIN_URL:-postgres://postgres@127.0.0.1:5432/postgres}"

need() { # command, Debian package
  command -v "$1" > /dev/null && return
  [ "$(id -u)" = 0 ] && { apt-get install -y -q "$2" > /dev/null 2>&1 || { apt-get update -q > /dev/null && apt-get install -y -q "$2" > /dev/null; }; }
  command -v "$1" > /dev/null || { echo "$1 is needed (Debian: apt-get install $2)"; exit 1; }
}
need wrk wrk
need sqlite3 sqlite3
need psql postgresql-client
cargo build --release -q -p failpass
bin=target/release/failpass
work=target/bench-scale
mkdir -p "$work"
tmp=$(mktemp -d)
pid=""
copy=""
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  [ -n "$copy" ] && psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $copy WITH (FORCE)" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
port=18461
base="http://127.0.0.1:$port"

endpoints=(
  "/api/v1/figures?group_by=none"
  "/api/v1/figures?group_by=route"
  "/api/v1/figures?group_by=agent"
  "/api/v1/figures?group_by=week"
  "/api/v1/figures?group_by=route,agent,model"
  "/api/v1/figures?group_by=route&period=this_year"
  "/api/v1/figures?group_by=agent&since=2025-06-01&until=2025-09-15"
  "/api/v1/figures?group_by=project&period=this_year&dated=spent"
  "/api/v1/throughput"
  "/api/v1/glance"
  "/api/v1/distributions?metric=cost_usd&group_by=agent"
  "/api/v1/oracles"
  "/api/v1/facets"
  "/api/v1/charts/throughput"
  "/api/v1/charts/rate?group_by=route"
  "/api/v1/reports?limit=50"
  "/api/v1/reports?limit=50&route=agent_first&sort=cost"
  "/api/v1/status/pytorch/pytorch"
  "/status/pytorch/pytorch"
)
# The Overview's calls, for wrk.
overview=(
  "/api/v1/figures?group_by=none"
  "/api/v1/figures?group_by=route"
  "/api/v1/throughput"
  "/api/v1/glance"
  "/api/v1/charts/throughput"
)
raw_sql="SELECT r.route, COUNT(DISTINCT r.id), COUNT(a.id), SUM(a.cost_usd), \
SUM(CASE WHEN a.counts THEN 1 ELSE 0 END) FROM reports r LEFT JOIN attempts a \
ON a.report_id = r.id AND a.goal = 'reproduce' GROUP BY r.route"

# p50 and p99 in ms of `runs` calls of a URL (after one warm-up).
timed() {
  curl -s -o /dev/null "$1"
  for _ in $(seq 1 "$runs"); do curl -s -o /dev/null -w '%{time_total}\n' "$1"; done |
    sort -n | awk '{ v[NR] = $1 * 1000 } END {
      p50 = v[int((NR + 1) / 2)]; i = int(NR * 0.99 + 0.999); if (i > NR) i = NR; if (i < 1) i = 1;
      printf "%.1f %.1f\n", p50, v[i] }'
}
rss() { awk '/VmRSS/ { printf "%.0f MB", $2 / 1024 }' "/proc/$pid/status"; }

for engine in $engines; do
  echo "== $engine: $reports reports, $attempts attempts =="
  if [ "$engine" = sqlite ]; then
    url="$PWD/$work/scale-$reports-$attempts.db"
    if [ ! -f "$url.done" ]; then
      rm -f "$url" "$url-wal" "$url-shm"
      "$bin" demo --reports "$reports" --attempts "$attempts" --seed 1 --database-url "$url" 2>/dev/null
      touch "$url.done"
    fi
  else
    name="failpass_scale_${reports}_${attempts}"
    url="${pg_admin%/*}/$name"
    if [ "$(psql "$pg_admin" -tAc "SELECT 1 FROM pg_database WHERE datname = '$name'")" != 1 ] ||
       [ "$(psql "$url" -tAc "SELECT COUNT(*) FROM attempts" 2>/dev/null)" != "$attempts" ]; then
      psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $name" -c "CREATE DATABASE $name"
      "$bin" demo --reports "$reports" --attempts "$attempts" --seed 1 --database-url "$url" 2>/dev/null
      psql "$url" -qc "VACUUM ANALYZE"
    fi
  fi
  "$bin" serve --bind "127.0.0.1:$port" --database-url "$url" --data-dir "$tmp/data" --workers 0 > "$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 400); do curl -fs "$base/healthz" > /dev/null && break; sleep 0.05; done
  curl -fs "$base/healthz" > /dev/null || { echo "failpass did not start:"; cat "$tmp/log"; exit 1; }
  echo "RSS at rest: $(rss)"

  printf '%-62s %9s %9s %9s\n' endpoint "p50 ms" "p99 ms" bytes
  for e in "${endpoints[@]}"; do
    read -r p50 p99 <<< "$(timed "$base$e")"
    size=$(curl -s -o /dev/null -w '%{size_download}' "$base$e")
    printf '%-62s %9s %9s %9s\n' "$e" "$p50" "$p99" "$size"
    [ "$e" = "/api/v1/figures?group_by=route" ] && route_p50=$p50 && route_size=$size
  done
  echo "RSS after the calls: $(rss)"

  # The static file closest in size to the route figures' response.
  static=$({ find target/site -type f -printf '%s %P\n' 2>/dev/null || true; } |
    awk -v n="$route_size" '{ d = $1 - n; if (d < 0) d = -d; print d, $2 }' | sort -n | head -1 | cut -d' ' -f2)
  if [ -n "$static" ]; then
    read -r s50 s99 <<< "$(timed "$base/$static")"
    echo "static /$static ($(curl -s -o /dev/null -w '%{size_download}' "$base/$static") bytes): p50 $s50 ms, p99 $s99 ms"
  else
    s50=""
    echo "static: no dashboard built (cargo xtask frontend), so no static file to compare"
  fi

  if [ "$engine" = sqlite ]; then
    raw=$(printf '.timer on\n%s;\n' "$raw_sql" | sqlite3 "$url" | awk '/Run Time/ { printf "%.1f", $4 * 1000 }')
  else
    raw=$(psql "$url" -c '\timing on' -c "$raw_sql" | awk '/^Time:/ { print $2 }')
  fi
  echo "raw route aggregate ($engine CLI): $raw ms"
  awk -v f="$route_p50" -v r="$raw" -v s="$s50" 'BEGIN {
    printf "route figures: %.1f× faster than the raw aggregate (target ≥ 100×)", r / f
    if (s != "") printf "; %.1f× the static file (target ≤ 3×)", f / s
    printf "\n" }'

  lua="$tmp/overview.lua"
  {
    echo "local paths = {"
    for e in "${overview[@]}"; do echo "  \"$e\","; done
    echo "}"
    echo "local i = 0"
    echo "request = function() i = i % #paths + 1; return wrk.format(\"GET\", paths[i]) end"
  } > "$lua"
  ( sleep $(( wrk_seconds / 2 )); echo "RSS under load: $(rss)" ) &
  sampler=$!
  wrk -t 2 -c 32 -d "${wrk_seconds}s" --timeout 10s --latency -s "$lua" "$base" > "$tmp/wrk" 2>&1 || true
  wait "$sampler"
  echo "wrk, 32 connections, ${wrk_seconds} s, the Overview's calls:"
  grep -E "Requests/sec|Socket errors|Non-2xx|requests in|99%|50%" "$tmp/wrk" | sed 's/^/  /'
  grep -qE "Socket errors|Non-2xx" "$tmp/wrk" || echo "  errors: 0"
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""

  # Live writes, on a copy: the read figures above stay those of the demo's data.
  if [ "$engine" = sqlite ]; then
    write_url="$tmp/writes.db"
    sqlite3 "$url" ".backup '$write_url'"
  else
    copy="failpass_scale_writes_$$"
    psql "$pg_admin" -qc "CREATE DATABASE $copy TEMPLATE $name"
    write_url="${pg_admin%/*}/$copy"
  fi
  slug=pytorch/pytorch
  token=$("$bin" token create --project "$slug" --scope agent --name bench-writes --database-url "$write_url" 2>/dev/null |
    grep -o 'fp_[A-Za-z0-9_-]*' | head -1)
  ids_sql="SELECT r.id FROM reports r JOIN projects p ON p.id = r.project_id WHERE p.slug = '$slug' ORDER BY r.id LIMIT 43"
  if [ "$engine" = sqlite ]; then ids=$(sqlite3 "$write_url" "$ids_sql"); else ids=$(psql "$write_url" -tAc "$ids_sql"); fi
  "$bin" serve --bind "127.0.0.1:$port" --database-url "$write_url" --data-dir "$tmp/data" --workers 0 > "$tmp/log" 2>&1 &
  pid=$!
  for _ in $(seq 1 400); do curl -fs "$base/healthz" > /dev/null && break; sleep 0.05; done
  # shellcheck disable=SC2086 # the ids are words
  scripts/bench-writes.sh "$base" "$token" "$pid" $ids
  kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; pid=""
  if [ "$engine" = sqlite ]; then rm -f "$write_url" "$write_url-wal" "$write_url-shm"; else
    psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $copy WITH (FORCE)"; copy=""
  fi

  if [ "${IMPORT:-1}" = 1 ]; then
    python3 scripts/gen_attempts.py "$attempts" > "$tmp/import.ndjson"
    if [ "$engine" = sqlite ]; then import_url="$tmp/import.db"; else
      copy="failpass_scale_import_$$"
      psql "$pg_admin" -qc "CREATE DATABASE $copy"
      import_url="${pg_admin%/*}/$copy"
    fi
    /usr/bin/time -f '%e %M' -o "$tmp/time" "$bin" import --format ndjson --database-url "$import_url" \
      "$tmp/import.ndjson" > "$tmp/import.out" 2> /dev/null || true
    read -r secs peak < "$tmp/time"
    lines=$(wc -l < "$tmp/import.ndjson")
    printf 'bulk import (NDJSON, %s records): %.1f s, %.0f records/s, peak RSS %.0f MB (%s)\n' "$lines" "$secs" \
      "$(echo "$lines / $secs" | bc -l)" "$(echo "$peak / 1024" | bc -l)" "$(tail -1 "$tmp/import.out")"
    rm -f "$tmp/import.ndjson" "$tmp/import.db"*
    if [ "$engine" = postgres ]; then psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $copy WITH (FORCE)"; copy=""; fi
  fi
done
