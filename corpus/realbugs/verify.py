#!/usr/bin/env python3
"""Verify the real-bug corpus: every reproduction must fail on its buggy
release and pass on its fixed release (each run N times, default 3).

Usage:
  python3 verify.py                 # all libraries, all bugs
  python3 verify.py --lib pandas    # one library
  python3 verify.py --id pandas-52629 --id numpy-23456
  python3 verify.py --runs 1        # quicker
  python3 verify.py --check script.py --lib pandas --buggy 2.0.0 --fixed 2.0.1   # try a draft

Environments are made with uv under $RB_ROOT (default /tmp/rb): one venv per
(package, version), built with --only-binary :all: and --exclude-newer set to
the last upload of that release's cp311/py3 wheels plus one day, so the
dependencies are those a user would have got at release time.
"""
import argparse, datetime, glob, json, os, shutil, subprocess, sys, tempfile, time, tomllib, urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("RB_ROOT", "/tmp/rb")
UV = os.environ.get("UV", "/tmp/uvt/bin/uv")
PY = os.environ.get("RB_PYTHON", "/usr/bin/python3.11")
TIMEOUT = 120


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def ensure_uv():
    global UV
    if os.path.exists(UV):
        return
    found = shutil.which("uv")
    if found:
        UV = found
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", "/tmp/uvt", "uv==0.13.9"], check=True)
    UV = "/tmp/uvt/bin/uv"


def simple_index(pkg):
    os.makedirs(f"{ROOT}/pypi", exist_ok=True)
    cache = f"{ROOT}/pypi/{pkg}.json"
    if os.path.exists(cache) and time.time() - os.path.getmtime(cache) < 86400:
        return json.load(open(cache))
    req = urllib.request.Request(f"https://pypi.org/simple/{pkg}/",
                                 headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    data = json.load(urllib.request.urlopen(req, timeout=60))
    json.dump(data, open(cache, "w"))
    return data


def wheel_matches(fn, pkg, version):
    if not fn.endswith(".whl"):
        return False
    parts = fn[:-4].split("-")
    if len(parts) < 5:
        return False
    name, ver = parts[0], parts[1]
    pytag, abitag, plat = parts[-3], parts[-2], parts[-1]
    if name.lower().replace("_", "-") != pkg.lower().replace("_", "-") or ver != version:
        return False
    tags = pytag.split(".")
    ok_py = "cp311" in tags or any(t in ("py3", "py2.py3") or t.startswith("py3") for t in tags) or pytag == "py2.py3"
    ok_plat = plat == "any" or ("manylinux" in plat and "x86_64" in plat)
    return ok_py and ok_plat


def exclude_newer(pkg, version):
    files = [f for f in simple_index(pkg)["files"] if wheel_matches(f["filename"], pkg, version)]
    if not files:
        raise RuntimeError(f"no cp311/py3 manylinux x86_64 wheel for {pkg}=={version}")
    last = max(f["upload-time"] for f in files)
    t = datetime.datetime.fromisoformat(last.replace("Z", "+00:00")) + datetime.timedelta(days=1)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def env_for(lib, version):
    pkg = lib["package"]
    path = f"{ROOT}/envs/{pkg}-{version}"
    py = f"{path}/bin/python"
    stamp = f"{path}/.ready"
    if os.path.exists(stamp):
        return py
    ensure_uv()
    shutil.rmtree(path, ignore_errors=True)
    date = exclude_newer(pkg, version)
    reqs = [r.replace("{version}", version) for r in lib["requirements"]]
    subprocess.run([UV, "venv", "-q", "--python", PY, path], check=True)
    envv = dict(os.environ, UV_CACHE_DIR=f"{ROOT}/uvcache")
    cmd = [UV, "pip", "install", "-q", "--python", py, "--only-binary", ":all:",
           "--exclude-newer", date] + reqs
    log(f"[env] {pkg}-{version}: {' '.join(reqs)} (exclude-newer {date})")
    r = subprocess.run(cmd, env=envv, capture_output=True, text=True)
    if r.returncode != 0:
        shutil.rmtree(path, ignore_errors=True)
        raise RuntimeError(f"install failed for {pkg}=={version}: {r.stderr[-2000:]}")
    open(stamp, "w").write(date + "\n")
    return py


def run_once(py, script, lib):
    d = tempfile.mkdtemp(prefix="rbrun-")
    try:
        with open(os.path.join(d, "repro.py"), "w") as f:
            f.write(script)
        envv = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
        envv.update(lib.get("env", {}))
        envv["PYTHONHASHSEED"] = "0"
        try:
            r = subprocess.run([py, "repro.py"], cwd=d, env=envv, capture_output=True, text=True, timeout=TIMEOUT)
            return r.returncode, (r.stdout + r.stderr).strip().splitlines()[-1:] or [""]
        except subprocess.TimeoutExpired:
            return "timeout", ["timeout"]
    finally:
        shutil.rmtree(d, ignore_errors=True)


def run_n(py, script, lib, n):
    res = [run_once(py, script, lib) for _ in range(n)]
    fails = sum(1 for rc, _ in res if rc != 0)
    return fails, res


def load_libs(only_lib=None):
    libs = []
    for f in sorted(glob.glob(os.path.join(HERE, "*.toml"))):
        data = tomllib.load(open(f, "rb"))
        if only_lib and data["library"]["name"] not in only_lib:
            continue
        libs.append(data)
    return libs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append")
    ap.add_argument("--id", action="append")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--verbose", "-v", action="store_true")
    ap.add_argument("--check")
    ap.add_argument("--buggy")
    ap.add_argument("--fixed")
    a = ap.parse_args()
    n = a.runs

    if a.check:
        libs = load_libs(a.lib)
        if libs:
            lib = libs[0]["library"]
        else:  # drafting a library that has no data file yet
            lib = json.loads(os.environ.get("RB_LIB", "null")) or {
                "package": a.lib[0], "requirements": [a.lib[0] + "=={version}"]}
        script = open(a.check).read()
        for label, v in (("buggy", a.buggy), ("fixed", a.fixed)):
            if not v:
                continue
            fails, res = run_n(env_for(lib, v), script, lib, n)
            print(f"{label} {v}: {fails}/{n} failed; last: {res[-1][1][0][:300]}")
        return 0

    total = ok = 0
    for data in load_libs(a.lib):
        lib = data["library"]
        for bug in data.get("bug", []):
            if a.id and bug["id"] not in a.id:
                continue
            total += 1
            try:
                bf, br = run_n(env_for(lib, bug["buggy"]), bug["reproduction"], lib, n)
                ff, fr = run_n(env_for(lib, bug["fixed"]), bug["reproduction"], lib, n)
            except Exception as e:  # env problem
                print(f"{bug['id']}  ERROR {e}  FAIL", flush=True)
                continue
            good = bf == n and ff == 0
            ok += good
            print(f"{bug['id']}  buggy {lib['package']}=={bug['buggy']}: {bf}/{n} failed  "
                  f"fixed {lib['package']}=={bug['fixed']}: {n - ff}/{n} passed  {'OK' if good else 'FAIL'}", flush=True)
            if a.verbose or not good:
                log(f"   buggy last line: {br[-1][1][0][:300]}")
                log(f"   fixed last line: {fr[-1][1][0][:300]}")
    print(f"# {ok}/{total} verified", flush=True)
    return 0 if ok == total else 1


if __name__ == "__main__":
    sys.exit(main())
