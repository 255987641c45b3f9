#!/usr/bin/env bash
# Tries deploy/Containerfile on this machine, on a loopback port:
#   - `cargo xtask dist` builds the binary the image takes;
#   - the image builds (podman, else docker) from it and Debian's packages;
#   - `failpass serve --demo` starts in it (root in the container, runs as
#     users of their own: --cap-add SYS_ADMIN), answers /healthz, and grades
#     a candidate for #101 by running it in its sandbox: reproduced;
#   - `podman stop` ends it cleanly (SIGTERM) and the volume keeps the data;
#   - a second container on the volume, without SYS_ADMIN, still runs
#     candidates as users of their own (never root) but without namespaces
#     (network, PIDs, a read-only file system), and its log says so.
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
cleanup() {
  "$engine" rm -f "$name" "$name-nocap" > /dev/null 2>&1 || true
  "$engine" volume rm -f "$volume" > /dev/null 2>&1 || true
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
  --cap-add SYS_ADMIN -e FAILPASS_LOG=warn -e "FAILPASS_PUBLIC_URL=http://127.0.0.1:$port" \
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
ok "with SYS_ADMIN runs get their namespaces (no network, their own PIDs, a read-only file system)"

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
