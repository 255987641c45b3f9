#!/usr/bin/env bash
# Tries docs/deploy.md's pieces on this machine, on loopback ports only:
#   - deploy/failpass.service passes `systemd-analyze verify` (pointed at
#     the built binary; systemd itself does not run here);
#   - deploy/nginx.conf, with a self-signed certificate for failpass.test,
#     in front of `failpass serve --public-url https://failpass.test:18443
#     --trust-x-forwarded-for`: health over TLS, another Host refused, the
#     session cookie Secure, and an attempt's verification followed as
#     server-sent events through the proxy until its verdict;
# Prints what it checked; exits 1 at the first check that fails.
#
#   scripts/try-deploy.sh        (as root: runs get a user id of their own)
set -euo pipefail
cd "$(dirname "$0")/.."
need() { # command, Debian package
  command -v "$1" > /dev/null && return
  [ "$(id -u)" = 0 ] && apt-get install -y -q "$2" > /dev/null 2>&1
  command -v "$1" > /dev/null || { echo "$1 is needed (Debian: apt-get install $2)"; exit 1; }
}
need nginx nginx
need openssl openssl
need curl curl
cargo build --release -q -p failpass
bin=$PWD/target/release/failpass
tmp=$(mktemp -d)
# Runs are users of their own: they read the environments under the data directory.
chmod o+rx "$tmp"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done; rm -rf "$tmp"; }
trap cleanup EXIT
ok() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; exit 1; }
app=18080 tls=18443 host=failpass.test
https() { curl -s --cacert "$tmp/cert.pem" --resolve "$host:$tls:127.0.0.1" "$@"; }

# systemd: the unit as written, pointed at this binary.
if command -v systemd-analyze > /dev/null; then
  sed "s#/usr/local/bin/failpass#$bin#" deploy/failpass.service > "$tmp/failpass.service"
  systemd-analyze verify "$tmp/failpass.service" || fail "systemd-analyze verify deploy/failpass.service"
  ok "deploy/failpass.service passes systemd-analyze verify"
fi

# failpass behind nginx, TLS with a certificate of our own.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$host" -addext "subjectAltName=DNS:$host" \
  -keyout "$tmp/key.pem" -out "$tmp/cert.pem" 2> /dev/null
sed -e "s#listen 443 ssl;#listen 127.0.0.1:$tls ssl;#" -e "s#failpass.example.org#$host#" \
  -e "s#/etc/ssl/failpass/fullchain.pem#$tmp/cert.pem#" -e "s#/etc/ssl/failpass/privkey.pem#$tmp/key.pem#" \
  -e "s#127.0.0.1:8080#127.0.0.1:$app#g" deploy/nginx.conf > "$tmp/server.conf"
cat > "$tmp/nginx.conf" << EOF
daemon off;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log;
events {}
http {
  access_log $tmp/nginx-access.log;
  client_body_temp_path $tmp/body;
  proxy_temp_path $tmp/proxy;
  include $tmp/server.conf;
}
EOF
nginx -t -c "$tmp/nginx.conf" -p "$tmp" 2> "$tmp/nginx-t.log" || { cat "$tmp/nginx-t.log"; fail "nginx -t"; }
nginx -c "$tmp/nginx.conf" -p "$tmp" &
pids+=($!)
FAILPASS_LOG=warn "$bin" serve --demo --data-dir "$tmp/data" --bind "127.0.0.1:$app" --workers 1 \
  --public-url "https://$host:$tls" --trust-x-forwarded-for > "$tmp/failpass.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 200); do https -f "https://$host:$tls/healthz" > /dev/null && break; sleep 0.1; done
[ "$(https -o /dev/null -w '%{http_code}' "https://$host:$tls/healthz")" = 200 ] ||
  { tail -5 "$tmp/failpass.log" "$tmp/nginx-error.log"; fail "GET /healthz over TLS"; }
ok "GET https://$host:$tls/healthz answers 200 through nginx"

code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: elsewhere.example" "http://127.0.0.1:$app/api/v1/figures")
[ "${code:0:1}" = 4 ] || fail "a request for another Host answered $code"
ok "a request for another Host is refused ($code)"

read -r name password < <(awk '/demo-admin/ { print $1, $2 }' "$tmp/data/demo-credentials.txt")
cookie=$(https -o /dev/null -D - --data-urlencode "name=$name" --data-urlencode "password=$password" \
  "https://$host:$tls/signin" | grep -i '^set-cookie:' | head -1)
grep -qi 'secure' <<< "$cookie" || fail "the session cookie is not Secure: $cookie"
grep -qi 'httponly' <<< "$cookie" || fail "the session cookie is not HttpOnly: $cookie"
ok "signing in over TLS sets a Secure, HttpOnly session cookie"

token=$("$bin" token create --data-dir "$tmp/data" --project fastnum/fastnum --scope agent --name deploy 2> /dev/null)
body='{"report":{"project":"fastnum/fastnum","external_id":"101"},"agent":"deploy-check","verdict":"hypothesis","verdict_source":"llm","verify":true,"candidate":"import math\nimport fastnum\nprobs = fastnum.softmax([1000.0, 1000.0])\nassert not any(math.isnan(p) for p in probs), f\"probabilities contain nan: {probs}\"\n"}'
id=$(https -H "Authorization: Bearer $token" -H 'content-type: application/json' -d "$body" \
  "https://$host:$tls/api/v1/attempts" | sed -E 's/.*"id":([0-9]+).*/\1/')
[[ "$id" =~ ^[0-9]+$ ]] || fail "submitting an attempt through the proxy: $id"
events=$(https -N --max-time 120 -H "Authorization: Bearer $token" "https://$host:$tls/api/v1/attempts/$id/events" || true)
grep -q '^event: done' <<< "$events" || fail "no done event through the proxy: $events"
grep -q '"verdict":"reproduced"' <<< "$events" || fail "the verdict through the proxy: $events"
ok "attempt $id's verification followed as server-sent events through nginx: reproduced"

