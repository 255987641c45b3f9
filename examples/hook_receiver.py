#!/usr/bin/env python3
"""A webhook receiver for failpass's `signed` hooks, standard library only.

It checks each delivery as docs/agents.md ("Webhooks") says a receiver should:
the `X-Failpass-Signature` header is `t=<unix seconds>,v1=<hex>`, where the hex
is HMAC-SHA256 under the hook's secret of `<t>.<raw body>`; a signature older
than five minutes is refused (so an old delivery cannot be replayed), and the
comparison is constant-time. A good delivery is printed as one JSON line and
answered 200; a bad signature is answered 401, a body without a length 411,
one over 1 MiB 413, each said why on standard error. (The delivery id header
is not signed: trust the body's fields, not it.)

    FAILPASS_HOOK_SECRET=whsec_… python3 examples/hook_receiver.py --port 9100 \
        [--until verdict] [--timeout 600]

`--until EVENT` exits 0 after the first good delivery of that event (for a
script that waits for a verdict); `--timeout` exits 1 if none came in time.
"""

import argparse
import hashlib
import hmac
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOLERANCE_SECONDS = 300
MAX_BODY = 1 << 20


def verify(secret: str, header: str, body: bytes, now: float) -> str | None:
    """None when the signature holds; else why not."""
    parts = dict(p.strip().split("=", 1) for p in header.split(",") if "=" in p)
    try:
        t = int(parts["t"])
        given = bytes.fromhex(parts["v1"])
    except (KeyError, ValueError):
        return "the signature header is not t=…,v1=…"
    if abs(now - t) > TOLERANCE_SECONDS:
        return f"the signature is {int(now - t)} s old"
    expected = hmac.new(secret.encode(), f"{t}.".encode() + body, hashlib.sha256).digest()
    if not hmac.compare_digest(expected, given):
        return "the signature does not match the body"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument("--until", choices=["verdict", "route", "status"])
    parser.add_argument("--timeout", type=float, default=0, help="seconds; 0 waits for ever")
    args = parser.parse_args()
    secret = os.environ.get("FAILPASS_HOOK_SECRET", "")
    if not secret:
        print("hook_receiver: set FAILPASS_HOOK_SECRET to the hook's secret", file=sys.stderr)
        return 2
    done = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def answer(self, code: int, why: str = "") -> None:
            if why:
                print(f"hook_receiver: refused delivery {self.headers.get('X-Failpass-Delivery')}: {why}",
                      file=sys.stderr, flush=True)
            self.send_response(code)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            try:
                length = int(self.headers.get("Content-Length") or "")
            except ValueError:
                return self.answer(411, "no Content-Length")
            if not 0 <= length <= MAX_BODY:
                return self.answer(413, f"a body of {length} bytes (at most {MAX_BODY})")
            body = self.rfile.read(length)
            why = verify(secret, self.headers.get("X-Failpass-Signature", ""), body, time.time())
            if why:
                return self.answer(401, why)
            try:
                event = json.loads(body)
            except ValueError as e:
                return self.answer(400, f"the body is not JSON: {e}")
            # A slack or discord hook's body ({"text": …}, {"content": …}) names no
            # event: the header does (it is not signed; the body is).
            if not isinstance(event, dict):
                return self.answer(400, "the body is not a JSON object")
            event.setdefault("event", self.headers.get("X-Failpass-Event"))
            print(json.dumps({"delivery": self.headers.get("X-Failpass-Delivery"), **event}), flush=True)
            self.answer(200)
            if args.until and event.get("event") == args.until:
                done.set()

        def log_message(self, *_: object) -> None:  # one line per delivery is printed above
            pass

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"hook_receiver: listening on http://127.0.0.1:{args.port}/", file=sys.stderr, flush=True)
    got = done.wait(args.timeout or None)
    server.shutdown()
    return 0 if got else 1


if __name__ == "__main__":
    sys.exit(main())
