#!/usr/bin/env bash
# Memory under hostile input: the release server's resident memory before and
# after one import request whose body is a single line of SIZE_MB megabytes
# (the streamed formats cap a line at 8 MiB; the rest of it must be skipped,
# not held). Prints figures; asserts nothing.
#   scripts/bench-hostile-input.sh [SIZE_MB]     default: 200
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-200}
cargo build --release -q -p failpass
bin=$PWD/target/release/failpass
work=$(mktemp -d)
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
"$bin" serve --bind 127.0.0.1:0 --workers 0 --data-dir "$work" > "$work/out" 2>/dev/null &
pid=$!
until grep -q "running at" "$work/out" 2>/dev/null; do sleep 0.1; done
url=$(grep -o 'http://[^ ]*' "$work/out" | head -1)
echo "long enough password" | "$bin" user add bench --admin --password-stdin --data-dir "$work" > /dev/null
token=$("$bin" token create --user bench --data-dir "$work" 2>/dev/null)
rss() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$pid/status"; }
curl -s "${url}healthz" > /dev/null
before=$(rss VmRSS)
start=$(date +%s.%N)
answer=$(python3 -c "
import sys
out = sys.stdout.buffer
out.write(b'{\"kind\":\"report\",\"project\":\"x/y\",\"external_id\":\"1\",\"title\":\"')
chunk = b'x' * (1 << 20)
for _ in range($size_mb):
    out.write(chunk)
out.write(b'\"}\n')
" | curl -s -XPOST "${url}api/v1/import?format=ndjson" -H "authorization: Bearer $token" -H 'content-type: application/x-ndjson' --data-binary @-)
secs=$(echo "$(date +%s.%N) - $start" | bc -l)
after=$(rss VmRSS)
peak=$(rss VmHWM)
printf 'one %s MB line: %.1f s; server RSS before %d MiB, after %d MiB, peak %d MiB\n' "$size_mb" "$secs" $((before / 1024)) $((after / 1024)) $((peak / 1024))
echo "answer: $(echo "$answer" | cut -c1-200)"
