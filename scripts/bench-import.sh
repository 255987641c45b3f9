#!/usr/bin/env bash
# NDJSON import benchmark: attempts per second and peak memory (max RSS) for
# growing inputs, into SQLite and into PostgreSQL. Prints figures; asserts nothing.
#   scripts/bench-import.sh [SIZES...]     default: 250000 500000 1000000
# PostgreSQL: $BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres);
# a fresh database is created and dropped per run.
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("${@:-250000 500000 1000000}")
read -r -a sizes <<< "${sizes[*]}"
admin=${BENCH_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}
cargo build --release -q -p failpass
bin=target/release/failpass
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '%-10s %-8s %10s %12s %12s\n' attempts engine seconds attempts/s max_rss_MB
for n in "${sizes[@]}"; do
  python3 scripts/gen_attempts.py "$n" > "$work/in.ndjson"
  total=$(wc -l < "$work/in.ndjson")
  for engine in sqlite postgres; do
    if [ "$engine" = sqlite ]; then
      rm -rf "$work/data"; url="$work/data/failpass.db"
    else
      db="failpass_bench_$$_$n"
      psql "$admin" -qc "DROP DATABASE IF EXISTS $db" -qc "CREATE DATABASE $db"
      url="${admin%/*}/$db"
    fi
    /usr/bin/time -f '%e %M' -o "$work/time" "$bin" import --format ndjson --database-url "$url" "$work/in.ndjson" > "$work/out" 2> /dev/null || true
    read -r secs rss < "$work/time"
    grep -q " 0 rejected" "$work/out" || { echo "rejections: $(cat "$work/out")"; }
    printf '%-10s %-8s %10.2f %12.0f %12.1f\n' "$n" "$engine" "$secs" "$(echo "$n / $secs" | bc -l)" "$(echo "$rss / 1024" | bc -l)"
    [ "$engine" = postgres ] && psql "$admin" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)"
  done
done
echo "(each input also holds 1 project and attempts/100 reports: $total lines for the last size)"
