"""Lint and ``--fix --unsafe-fixes --diff`` over the installed sources of large packages.

    python bench/realworld_sweep.py [--jobs 2] [--limit 60] [--max-files N] ray torch anyio ...

A name is looked up in site-packages, or given as a directory (e.g. /work/corpus/vllm).
Every file: lint (all rules, the pre-filter as the command line runs it), then the
fixer with unsafe fixes, in memory (nothing is written). Per-file time limit (SIGALRM
in the worker); a worker that dies is counted as a crash. Prints, per package: files,
parsed, findings, fixable, fixes applied, analysis errors (files Python cannot parse
either are counted apart), crashes, unparsable fixes, time-outs, time.
"""

from __future__ import annotations

import argparse
import ast
import os
import signal
import sys
import sysconfig
import time
import warnings
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from shutdown_lint import registry
from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=tuple(r.code for r in registry.all_rules()), target_version="py311")
_LIMIT = 60


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _cpython_parses(data: bytes) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(data, "x", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except Exception:
        return False


def one(path: str) -> dict:
    out = {"path": path, "findings": 0, "fixable": 0, "applied": 0, "parsed": False, "error": None,
           "crash": None, "unparsable": False, "timeout": False, "by_code": {}}
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(_LIMIT)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
        result = lint_source(data, path, SETTINGS)
        out["parsed"] = result.parsed
        out["findings"] = len(result.diagnostics)
        out["by_code"] = dict(Counter(d.code for d in result.diagnostics))
        out["fixable"] = sum(1 for d in result.diagnostics if d.fix)
        if result.error:
            out["error"] = result.error if _cpython_parses(data) else "python-rejects"
        elif out["fixable"]:
            fixed = fix_source(data, path, SETTINGS, unsafe=True)
            out["applied"] = fixed.applied
            if fixed.source != data and not _cpython_parses(fixed.source):
                out["unparsable"] = True
    except _Timeout:
        out["timeout"] = True
    except Exception as e:  # a crash of the engine: what this sweep is looking for
        out["crash"] = f"{type(e).__name__}: {e}"
    finally:
        signal.alarm(0)
    return out


def _files(top: str, max_files: int) -> list[str]:
    found = []
    for d, dirs, names in os.walk(top):
        dirs[:] = sorted(x for x in dirs if x not in ("__pycache__",))
        found += [os.path.join(d, n) for n in sorted(names) if n.endswith(".py")]
    return found[:max_files] if max_files else found


def sweep(name: str, top: str, jobs: int, max_files: int) -> Counter:
    files = _files(top, max_files)
    c: Counter = Counter(files=len(files))
    t0 = time.monotonic()
    todo = list(files)
    while todo:
        try:
            with ProcessPoolExecutor(jobs, initializer=_init, initargs=(_LIMIT,)) as pool:
                for res in pool.map(one, todo, chunksize=4):
                    todo.remove(res["path"])
                    c["parsed"] += res["parsed"]
                    c["findings"] += res["findings"]
                    c["fixable"] += res["fixable"]
                    c["fixes applied"] += res["applied"]
                    c["unparsable fixes"] += res["unparsable"]
                    c["time-outs"] += res["timeout"]
                    for code, n in res["by_code"].items():
                        c[code] += n
                    if res["crash"]:
                        c["crashes"] += 1
                        print(f"  CRASH {res['path']}: {res['crash']}", file=sys.stderr)
                    if res["error"] == "python-rejects":
                        c["files Python rejects too"] += 1
                    elif res["error"]:
                        c["analysis errors"] += 1
                        print(f"  ERROR {res['error']}", file=sys.stderr)
                    if res["timeout"]:
                        print(f"  TIMEOUT {res['path']}", file=sys.stderr)
                    if res["unparsable"]:
                        print(f"  UNPARSABLE FIX {res['path']}", file=sys.stderr)
        except BrokenProcessPool:
            c["crashes"] += 1  # the first pending file is the suspect
            print(f"  WORKER DIED near {todo[0]}", file=sys.stderr)
            todo.pop(0)
    c["seconds"] = round(time.monotonic() - t0)
    return c


def _init(limit: int) -> None:
    global _LIMIT
    _LIMIT = limit


def main() -> int:
    global _LIMIT
    p = argparse.ArgumentParser()
    p.add_argument("packages", nargs="*", default=["ray", "torch", "anyio", "pre_commit", "hypothesis", "pip",
                                                   "setuptools", "aiohttp", "libcst"])
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--limit", type=int, default=60, help="seconds per file")
    p.add_argument("--max-files", type=int, default=0)
    args = p.parse_args()
    _LIMIT = args.limit
    site = sysconfig.get_paths()["purelib"]
    total: Counter = Counter()
    for name in args.packages:
        top = name if os.path.isdir(name) else os.path.join(site, name)
        if not os.path.isdir(top):
            print(f"{name}: not found", file=sys.stderr)
            continue
        c = sweep(name, top, args.jobs, args.max_files)
        total.update(c)
        print(f"{os.path.basename(top.rstrip('/'))}: " + ", ".join(f"{k}={v}" for k, v in sorted(c.items())), flush=True)
    print("TOTAL: " + ", ".join(f"{k}={v}" for k, v in sorted(total.items())))
    return 1 if total["crashes"] or total["unparsable fixes"] else 0


if __name__ == "__main__":
    sys.exit(main())
