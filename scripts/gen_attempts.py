#!/usr/bin/env python3
"""Writes a failpass NDJSON import: one project, REPORTS reports, ATTEMPTS attempts.

usage: gen_attempts.py ATTEMPTS [REPORTS] > file.ndjson

Deterministic (seeded), so runs compare. Attempts are spread evenly over the
reports (grouped by report, as an agent harness would write them), with mixed
verdicts, costs and keys.
"""
import json
import random
import sys

attempts = int(sys.argv[1])
reports = int(sys.argv[2]) if len(sys.argv) > 2 else max(1, attempts // 100)
rng = random.Random(7)
out = sys.stdout
w = out.write
d = lambda o: json.dumps(o, separators=(",", ":"))
w(d({"kind": "project", "slug": "bench/lib"}) + "\n")
body = "```python\nimport lib\nlib.logsumexp(x)\n```\nTraceback (most recent call last):\nValueError: overflow in logsumexp\n"
for r in range(reports):
    w(d({"kind": "report", "project": "bench/lib", "external_id": str(r), "title": f"logsumexp overflow {r}",
                  "body": body, "labels": ["bug"], "filed_at": "2026-01-01T00:00:00Z"}) + "\n")
verdicts = [("reproduced", "deterministic"), ("not_reproduced", "deterministic"), ("error", "deterministic"),
            ("lead", "llm"), ("hypothesis", "llm")]
per = attempts // reports
extra = attempts - per * reports
n = 0
for r in range(reports):
    for k in range(per + (1 if r < extra else 0)):
        v, s = verdicts[rng.randrange(len(verdicts))]
        w(d({"kind": "attempt", "report": {"project": "bench/lib", "external_id": str(r)},
                      "agent": ("repgen", "swe-agent", "openhands")[k % 3], "model": "m-1", "attempt_key": f"a{n}",
                      "verdict": v, "verdict_source": s, "cost_usd": round(rng.uniform(0.01, 2.0), 4),
                      "wall_seconds": rng.randint(10, 900), "tokens_in": rng.randint(1000, 90000),
                      "tokens_out": rng.randint(100, 9000), "api_calls": rng.randint(1, 60),
                      "started_at": "2026-02-01T10:00:00Z"}) + "\n")
        n += 1
