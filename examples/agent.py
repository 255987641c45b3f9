#!/usr/bin/env python3
"""A minimal failpass agent, end to end: read a report, propose a
reproduction, let failpass grade it by running it, exit with the verdict.

A real agent asks a model for the candidate; this one stands in for the
model with the simplest strategy that sometimes works: the report's first
Python code block (`>>> ` prompts taken off) is the candidate. Everything
else is what any agent does: the report from the API, the candidate sent
with the agent's trajectory (its steps, as JSON Lines) by `failpass submit
attempt --trajectory … --wait`, the exit code passed on.

Against the demo (`cargo xtask run`, which serves on 127.0.0.1:8080 with
its data in ./data), from the repository:

    export FAILPASS_TOKEN=$(target/debug/failpass token create \
        --data-dir data --project fastnum/fastnum --scope agent --name example)
    python3 examples/agent.py 101      # softmax nan: reproduced, exit 0
    python3 examples/agent.py 102      # logsumexp inf: the snippet asserts nothing, exit 1

Environment: FAILPASS_TOKEN (a token of the project, scope `agent` or
`ci`), FAILPASS_SERVER (default http://127.0.0.1:8080), FAILPASS_BIN (the
failpass binary; default target/release/failpass or target/debug/failpass,
whichever was built last, else `failpass` on PATH).
Exit: 0 reproduced, 1 not reproduced, 2 an error (as `failpass submit`).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

AGENT = "example-snippet-agent"
MODEL = "snippet-v1"


def api(server, token, path):
    """GET a failpass API path as JSON."""
    req = urllib.request.Request(server.rstrip("/") + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.load(r)


def find_report(server, token, project, number):
    """The report numbered `number` in its tracker, by a search of the queue."""
    query = urllib.parse.urlencode({"project": project, "q": number, "limit": 50})
    for summary in api(server, token, f"/api/v1/reports?{query}")["items"]:
        if summary["external_id"] == number:
            return api(server, token, f"/api/v1/reports/{summary['id']}")
    sys.exit(f"agent: report #{number} of {project} is not in failpass")


def propose(body):
    """The 'model': the first Python block of the report, prompts removed."""
    for block in re.findall(r"```(?:python|py)\n(.*?)```", body, re.S):
        lines = block.splitlines()
        if any(line.startswith(">>> ") for line in lines):
            lines = [line[4:] for line in lines if line.startswith((">>> ", "... "))]
        code = "\n".join(lines).strip()
        if code:
            return code + "\n"
    return None


def attempt_key(project, number, candidate):
    """The same candidate for the same report is the same attempt, whatever
    this run's wall time: running the agent again is a retry, not a new one."""
    digest = hashlib.sha256(f"{AGENT}\n{MODEL}\n{project}#{number}\n{candidate}".encode()).hexdigest()
    return f"{AGENT}:{digest[:32]}"


def failpass_bin():
    if os.environ.get("FAILPASS_BIN"):
        return os.environ["FAILPASS_BIN"]
    target = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target")
    built = [p for p in (os.path.join(target, t, "failpass") for t in ("release", "debug")) if os.path.exists(p)]
    # `cargo xtask run` builds debug, `cargo xtask dist` release: the newer is the one serving.
    return max(built, key=os.path.getmtime) if built else shutil.which("failpass")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", help="the report's number in its tracker, e.g. 101")
    p.add_argument("--project", default="fastnum/fastnum")
    p.add_argument("--server", default=os.environ.get("FAILPASS_SERVER", "http://127.0.0.1:8080"))
    args = p.parse_args()
    token = os.environ.get("FAILPASS_TOKEN")
    if not token:
        sys.exit("agent: set FAILPASS_TOKEN to a token of the project (failpass token create --scope agent)")
    binary = failpass_bin()
    if not binary:
        sys.exit("agent: no failpass binary: build it (cargo xtask run, or cargo build -p failpass) or set FAILPASS_BIN")

    steps = []  # the trajectory: what this agent did, as JSON Lines of steps

    def step(action, input_, output):
        steps.append({"action": action, "input": input_, "output": output,
                      "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

    report = find_report(args.server, token, args.project, args.report)
    step("read_report", f"{args.project}#{args.report}", report["title"])
    # The agent's wall time is the model's: proposing, not the network. So a
    # second run of the same candidate sends the same attempt (a retry).
    started = time.time()
    candidate = propose(report["body"])
    wall = time.time() - started
    step("propose", "the report's first Python block", candidate or "(none)")
    if candidate is None:
        print(f"agent: #{args.report} has no code block to start from; nothing to submit")
        return 2
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(candidate)
    step("write_file", f"{f.name}\n{candidate}", f"wrote {len(candidate.splitlines())} lines")
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as t:
        t.write("".join(json.dumps(s) + "\n" for s in steps))
    print(f"agent: proposing for #{args.report} ({report['title']}):\n{candidate}")
    cmd = [binary, "submit", "attempt", "--server", args.server, "--project", args.project,
           "--report", args.report, "--agent", AGENT, "--model", MODEL, "--candidate", f.name,
           "--cost-usd", "0", "--wall-seconds", f"{wall:.1f}", "--trajectory", t.name,
           "--attempt-key", attempt_key(args.project, args.report, candidate),
           "--wait", "--timeout", "600"]
    # The token travels in FAILPASS_TOKEN, never on the command line.
    code = subprocess.run(cmd).returncode
    os.unlink(f.name)
    os.unlink(t.name)
    print({0: "agent: reproduced", 1: "agent: not reproduced"}.get(code, "agent: failed"))
    return code


if __name__ == "__main__":
    sys.exit(main())
