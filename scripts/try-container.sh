#!/usr/bin/env bash
# Tries deploy/Containerfile on this machine, on a loopback port:
#   - `cargo xtask dist` builds the binary the image takes;
#   - the image builds (podman, else docker) from it and Debian's packages;
#   - `failpass serve --demo` starts in it (root in the container, runs as
#     users of their own in roots of their own: --cap-add SYS_ADMIN; setup's
#     fenced network: --cap-add NET_ADMIN --device /dev/net/tun), answers
#     /healthz, and grades a candidate for #101 by running it in its
#     sandbox: reproduced;
#   - `podman stop` ends it cleanly (SIGTERM) and the volume keeps the data;
#   - a second container on the volume, without SYS_ADMIN, still runs
#     candidates as users of their own (never root) but without namespaces
#     (network, PIDs, a read-only file system), and its log says so;
#   - with DATABASE_URL (a PostgreSQL URL that may create databases): a
#     server on this machine with --workers 0 and a `failpass worker` in a
#     container (its own file system and data directory; the demo's package
#     directory mounted where the recipes name it) sharing a fresh database:
#     the container's worker grades what the server was sent.
# Prints what it checked; exits 1 at the first check that fails.
#
#   scripts/try-container.sh
#
# Settings (environment): ENGINE (podman or docker), BASE (the base image,
# default debian:bookworm-slim; `debootstrap` makes one where no registry
# can be reached: MAKE_BASE=1), ENGINE_ARGS (added to build and run, e.g.
# this workplace's machines need `--runtime=/usr/sbin/runc --ulimit
# nofile=1024:1024 --ulimit nproc=4096:4096`).
set -euo pipefail
cd "$(dirname "$0")/.."
engine=${ENGINE:-$(command -v podman > /dev/null && echo podman || echo docker)}
command -v "$engine" > /dev/null || { echo "podman or docker is needed (Debian: apt-get install podman)"; exit 1; }
base=${BASE:-debian:bookworm-slim}
read -r -a extra <<< "${ENGINE_ARGS:-}"
ok() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; exit 1; }
name=failpass-try-$$ port=18090 volume=failpass-try-$$
pids=() tmp=$(mktemp -d)
cleanup() {
  "$engine" rm -f "$name" "$name-nocap" "$name-worker" > /dev/null 2>&1 || true
  "$engine" volume rm -f "$volume" > /dev/null 2>&1 || true
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  [ -n "${db:-}" ] && psql -q "$DATABASE_URL" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" > /dev/null 2>&1
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ "${MAKE_BASE:-0}" = 1 ]; then
  # A Debian base from Debian's own mirror, for a machine without a registry.
  base=localhost/failpass-base:bookworm
  if ! "$engine" image inspect "$base" > /dev/null 2>&1; then
    root=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > /dev/null
    tar -C "$root" -c . | "$engine" import - "$base" > /dev/null
    rm -rf "$root"
  fi
  ok "base image $base made with debootstrap"
fi

cargo xtask dist > /dev/null
"$engine" build "${extra[@]}" -q -f deploy/Containerfile --build-arg "BASE=$base" -t failpass:try . > /dev/null ||
  fail "$engine build -f deploy/Containerfile"
ok "deploy/Containerfile builds on $base ($("$engine" image inspect failpass:try --format '{{.Size}}') bytes)"

"$engine" run "${extra[@]}" -d --name "$name" -p "127.0.0.1:$port:8080" -v "$volume:/var/lib/failpass" \
  --cap-add SYS_ADMIN --cap-add NET_ADMIN --device /dev/net/tun -e FAILPASS_LOG=warn -e "FAILPASS_PUBLIC_URL=http://127.0.0.1:$port" \
  failpass:try serve --demo --workers 1 > /dev/null
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.2; done
curl -sf "http://127.0.0.1:$port/healthz" > /dev/null || { "$engine" logs "$name" | tail -5; fail "GET /healthz"; }
ok "failpass serve --demo in the container answers /healthz on 127.0.0.1:$port"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: elsewhere.example" "http://127.0.0.1:$port/api/v1/figures")
[ "${code:0:1}" = 4 ] || fail "a request for another Host answered $code"
ok "listening on all the container's addresses, it refuses requests for another Host ($code)"

reproduces='import math\nimport fastnum\nprobs = fastnum.softmax([1000.0, 1000.0])\nassert not any(math.isnan(p) for p in probs), f\"probabilities contain nan: {probs}\"\n'
submit() { # container, agent name, candidate (JSON-escaped): an attempt on #101 with verification; prints its id
  local token body
  token=$("$engine" exec "$1" failpass token create --project fastnum/fastnum --scope agent --name "$2" 2> /dev/null)
  body='{"report":{"project":"fastnum/fastnum","external_id":"101"},"agent":"'$2'","verdict":"hypothesis","verdict_source":"llm","verify":true,"candidate":"'$3'"}'
  curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' -d "$body" \
    "http://127.0.0.1:$port/api/v1/attempts" | sed -E 's/.*"id":([0-9]+).*/\1/'
}
id=$(submit "$name" container-check "$reproduces")
[[ "$id" =~ ^[0-9]+$ ]] || fail "submitting an attempt: $id"
verdict=
for _ in $(seq 1 600); do
  verdict=$(curl -s "http://127.0.0.1:$port/api/v1/attempts/$id" | sed -nE 's/.*"verdict":"([a-z_]+)".*/\1/p')
  [ "$verdict" != hypothesis ] && [ -n "$verdict" ] && break
  sleep 0.5
done
[ "$verdict" = reproduced ] || { "$engine" logs "$name" | tail -20; fail "attempt $id in the container: $verdict"; }
ok "attempt $id graded in the container's sandbox: reproduced"
! "$engine" logs "$name" 2>&1 | grep -q "cannot create namespaces" ||
  fail "with SYS_ADMIN the log says runs get no namespaces"
curl -s "http://127.0.0.1:$port/api/v1/attempts/$id" | grep -q '"built_root":true,"network":"none","syscall_filter":true' ||
  fail "attempt $id's runs did not record a root of their own, no network and the system-call filter"
ok "with SYS_ADMIN runs get their namespaces, a root built for them and the system-call filter (their records say so)"
! "$engine" logs "$name" 2>&1 | grep -q "get no network" ||
  { "$engine" logs "$name" 2>&1 | grep "get no network"; fail "with NET_ADMIN and /dev/net/tun, setup still gets no network"; }
ok "with NET_ADMIN and /dev/net/tun, setup steps get fenced outbound network (the log names no lack)"

"$engine" stop -t 30 "$name" > /dev/null
code=$("$engine" inspect "$name" --format '{{.State.ExitCode}}')
[ "$code" = 0 ] || fail "failpass exited $code on SIGTERM"
ok "SIGTERM: failpass stopped cleanly (exit 0)"

# Without SYS_ADMIN, on the same data: candidates still run as users of their
# own (never root), but without namespaces; the log says so.
"$engine" run "${extra[@]}" -d --name "$name-nocap" -p "127.0.0.1:$port:8080" -v "$volume:/var/lib/failpass" \
  -e FAILPASS_LOG=warn -e "FAILPASS_PUBLIC_URL=http://127.0.0.1:$port" failpass:try serve --workers 1 > /dev/null
for _ in $(seq 1 300); do curl -sf "http://127.0.0.1:$port/healthz" > /dev/null && break; sleep 0.2; done
curl -s "http://127.0.0.1:$port/api/v1/attempts/$id" | grep -q '"verdict":"reproduced"' ||
  fail "the volume did not keep attempt $id"
ok "the volume kept the data across containers"
"$engine" logs "$name-nocap" 2>&1 | grep -q "cannot create namespaces" ||
  fail "without SYS_ADMIN the log does not say that runs lack namespaces"
ok "without SYS_ADMIN the log says runs get no namespaces (and how to give them)"
id=$(submit "$name-nocap" container-nocap 'import os\nprint(\"uid\", os.getuid())\n')
output=
for _ in $(seq 1 300); do
  output=$(curl -s "http://127.0.0.1:$port/api/v1/attempts/$id" | grep -o '"output":"uid [0-9]*' | head -1 || true)
  [ -n "$output" ] && break
  sleep 0.5
done
[ -n "$output" ] || fail "attempt $id did not run without SYS_ADMIN"
[ "${output##*uid }" != 0 ] || fail "a candidate ran as root: $output"
ok "without SYS_ADMIN a candidate still runs as a user of its own (${output#*\"output\":\"}), never root"

[ -n "${DATABASE_URL:-}" ] || exit 0
# PostgreSQL: the server here answers requests only; a worker in a container grades.
db=failpass_try_$$
psql -q "$DATABASE_URL" -c "CREATE DATABASE $db" > /dev/null || fail "creating database $db"
url="${DATABASE_URL%/*}/$db"
chmod o+rx "$tmp"
FAILPASS_LOG=warn target/release/failpass serve --demo --workers 0 --database-url "$url" --data-dir "$tmp/data" \
  --bind "127.0.0.1:$((port + 1))" > "$tmp/server.log" 2>&1 &
pids+=($!)
server="http://127.0.0.1:$((port + 1))"
for _ in $(seq 1 300); do curl -sf "$server/healthz" > /dev/null && break; sleep 0.2; done
curl -sf "$server/healthz" > /dev/null || { tail -5 "$tmp/server.log"; fail "the PostgreSQL server's /healthz"; }
"$engine" run "${extra[@]}" -d --name "$name-worker" --hostname "worker-$$" --network host --cap-add SYS_ADMIN --cap-add NET_ADMIN --device /dev/net/tun -e FAILPASS_LOG=info \
  -v "$tmp/data/demo:$tmp/data/demo:ro" failpass:try worker --database-url "$url" --concurrency 1 > /dev/null
token=$(target/release/failpass token create --database-url "$url" --project fastnum/fastnum --scope agent --name pg 2> /dev/null)
body='{"report":{"project":"fastnum/fastnum","external_id":"101"},"agent":"pg-check","verdict":"hypothesis","verdict_source":"llm","verify":true,"candidate":"'$reproduces'"}'
id=$(curl -s -H "Authorization: Bearer $token" -H 'content-type: application/json' -d "$body" "$server/api/v1/attempts" |
  sed -E 's/.*"id":([0-9]+).*/\1/')
[[ "$id" =~ ^[0-9]+$ ]] || fail "submitting to the PostgreSQL server: $id"
attempt=
for _ in $(seq 1 600); do
  attempt=$(curl -s -H "Authorization: Bearer $token" "$server/api/v1/attempts/$id")
  grep -q '"verdict":"reproduced"' <<< "$attempt" && break
  sleep 0.5
done
grep -q '"verdict":"reproduced"' <<< "$attempt" || { "$engine" logs "$name-worker" | tail -10; fail "attempt $id on PostgreSQL: $attempt"; }
runner=$(grep -o '"runner_id":"[^"]*"' <<< "$attempt" | head -1)
container_host=worker-$$
grep -q "\"runner_id\":\"$container_host:" <<< "$attempt" || fail "attempt $id was not graded in the container ($runner)"
ok "PostgreSQL: a server with --workers 0 took attempt $id, the worker in container $container_host graded it ($runner): reproduced"
