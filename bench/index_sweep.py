"""Precision of the project index: the cross-module rules with and without it.

    python bench/index_sweep.py [--rules SHD101,SHD102,SHD502,SHD503] DIR_OR_PACKAGE ...

Runs the command line (``--no-cache``, json output) over each code base twice, with the
index off (``SHUTDOWN_LINT_NO_INDEX=1``) and on, and prints per rule the findings of each
run and every finding that is new or gone with the index (to be read by hand).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
from collections import Counter


def _run(target: str, rules: str, index: bool, jobs: int) -> list[dict]:
    env = dict(os.environ)
    if not index:
        env["SHUTDOWN_LINT_NO_INDEX"] = "1"
    proc = subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--no-cache", "--isolated", "--no-respect-gitignore", "--select", rules,
         "--output-format", "json", "-j", str(jobs), target],
        capture_output=True, text=True, env=env)
    try:
        return json.loads(proc.stdout or "[]")
    except ValueError:
        print(proc.stderr[-2000:], file=sys.stderr)
        return []


def _key(d: dict) -> tuple:
    return (d["path"], d["line"], d["column"], d["code"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("targets", nargs="+")
    ap.add_argument("--rules", default="SHD101,SHD102,SHD502,SHD503")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    site = os.path.join(sys.prefix, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")
    if not os.path.isdir(site):
        site = sysconfig.get_paths()["purelib"]
    for t in args.targets:
        target = t if os.path.isdir(t) else os.path.join(site, t)
        files = sum(1 for _, _, fs in os.walk(target) for f in fs if f.endswith(".py"))
        off = {_key(d): d for d in _run(target, args.rules, False, args.jobs)}
        on = {_key(d): d for d in _run(target, args.rules, True, args.jobs)}
        c_off, c_on = Counter(k[3] for k in off), Counter(k[3] for k in on)
        print(f"== {t}: {files} files")
        for code in args.rules.split(","):
            print(f"   {code}: without index {c_off[code]}, with index {c_on[code]}")
        for k in sorted(set(on) - set(off)):
            print(f"   NEW  {k[3]} {k[0]}:{k[1]}: {on[k]['message'][:400]}")
        for k in sorted(set(off) - set(on)):
            print(f"   GONE {k[3]} {k[0]}:{k[1]}: {off[k]['message'][:300]}")
        for k in sorted(set(on) & set(off)):
            if on[k]["message"] != off[k]["message"]:
                print(f"   MSG  {k[3]} {k[0]}:{k[1]}: {on[k]['message'][-200:]}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
