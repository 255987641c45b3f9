#!/usr/bin/env bash
# GitHub webhook answer time (issue 14: "answered in well under a second").
# Starts a release build on a fresh SQLite file holding DEMO (the demo data, or
# none), sends N signed `issues` deliveries of the real huggingface/datasets
# issue in tests (each a new issue number, so each creates and routes a
# report), then N edits of them, one at a time over loopback, and prints the
# answer time's median, 95th percentile and maximum. Prints figures; asserts
# nothing.
#
#   scripts/bench-webhook.sh [N] [--demo]     default: 500
set -euo pipefail
cd "$(dirname "$0")/.."
n="${1:-500}"
demo="${2:-}"
cargo build --release -q -p failpass
bin=target/release/failpass
work=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

echo '{"kind":"project","slug":"huggingface/datasets"}' > "$work/p.ndjson"
"$bin" import --format ndjson --data-dir "$work" "$work/p.ndjson" > /dev/null
secret=$("$bin" webhook secret huggingface/datasets --data-dir "$work" | sed -n 2p)
port=18437
"$bin" serve --bind "127.0.0.1:$port" --data-dir "$work" --workers 0 $demo > "$work/log" 2>&1 &
pid=$!
for _ in $(seq 1 400); do curl -fs "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.05; done
curl -fs "http://127.0.0.1:$port/healthz" > /dev/null || { echo "failpass did not start:"; cat "$work/log"; exit 1; }

python3 - "$port" "$secret" "$n" backend/tests/fixtures/github/issues-opened.json <<'PY'
import hashlib, hmac, http.client, json, statistics, sys, time
port, secret, n, fixture = int(sys.argv[1]), sys.argv[2].encode(), int(sys.argv[3]), sys.argv[4]
payload = json.load(open(fixture))
conn = http.client.HTTPConnection("127.0.0.1", port)
def deliver(i, action, body):
    raw = json.dumps(body).encode()
    sig = "sha256=" + hmac.new(secret, raw, hashlib.sha256).hexdigest()
    t = time.perf_counter()
    conn.request("POST", "/api/v1/webhooks/github", raw, {"content-type": "application/json",
        "x-github-event": "issues", "x-github-delivery": f"bench-{action}-{i}", "x-hub-signature-256": sig})
    r = conn.getresponse(); out = json.loads(r.read())
    took = (time.perf_counter() - t) * 1000
    assert r.status == 200, (r.status, out)
    return took, out["status"]
for action in ("opened", "edited"):
    times, statuses = [], {}
    for i in range(n):
        body = json.loads(json.dumps(payload)); body["action"] = action
        body["issue"]["number"] = 100000 + i
        if action == "edited":
            body["issue"]["title"] += " (edited)"
        took, status = deliver(i, action, body)
        times.append(took); statuses[status] = statuses.get(status, 0) + 1
    times.sort()
    print(f"{action:7} {n} deliveries {statuses}: median {statistics.median(times):.1f} ms, "
          f"p95 {times[int(0.95 * (n - 1))]:.1f} ms, max {times[-1]:.1f} ms")
PY
