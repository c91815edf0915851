"""Audit ``shutdown-lint --fix --unsafe-fixes`` on checked-out code bases, for reading.

    python bench/fix_audit.py --out DIR [--scratch DIR] [--jobs 1] [--commit NAME=SHA ...] PATH [PATH ...]

Fetches nothing. Each PATH (a checked-out code base; its name is the folder's name) is copied
to a scratch folder (the original is only read) and, with ``--no-cache`` and ``--jobs N``:

1. ``--output-format json --unsafe-fixes`` on the copy: the findings and each fix's edits;
2. ``--diff --unsafe-fixes``: the diff the tool promises;
3. ``--fix --unsafe-fixes``: the fixed tree (``fixed/``);
4. ``--fix --unsafe-fixes --output-format json`` on a copy of that (``fixed2/``): the findings
   left, and whether the second fix changes anything.

Checks, per code base (each failure is listed in ``summary.md`` and makes the exit status 1):

* every changed file parses (``ast.parse``) and compiles (``compile()``) under this Python
  (a file whose original fails too is counted apart: not a fix problem);
* the second ``--fix`` is a no-op (``fixed2/`` byte-identical to ``fixed/``);
* ``--diff`` equals ``--fix``: the diff applied to the originals gives exactly ``fixed/``, and
  names exactly the files that changed;
* no new undefined names: pyflakes (when importable) on the original and the fixed text of each
  changed file, its undefined-name and shadowing messages compared by name; without pyflakes,
  each name the fix introduced (loaded in the fixed file, absent from the original) must be
  bound in the file or be a builtin;
* each finding's fix applied alone to its original file parses and compiles;
* every ``runtime_guard.X(...)`` call a fix introduced resolves (imported as the fixed program
  would, with the ``runtime_guard`` this Python imports), its arguments bind to the helper's
  signature, and it is awaited exactly when the helper is a coroutine function.

Written to ``--out``: ``hunks/<RULE>.txt`` (every fix of the rule, numbered ``#0``.., as its
own edits alone applied to the original file, with the enclosing function; then the findings
with no fix), ``hunks/all.json`` (the same as data), ``hunks/_combined.txt`` (functions where
fixes of two or more rules land, as ``--fix`` made them: how fixes compose), ``summary.md``
and ``summary.json``. For a rule with ``--sample-over`` fixes or more, ``--sample`` indices are
drawn (``random.Random(--seed)``) and listed for reading; below that, read them all.

Exit status: 0 every check passed, 1 a check failed, 2 bad usage or the linter failed.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import difflib
import hashlib
import io
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tokenize
import warnings
from collections import Counter, defaultdict
from typing import Optional

SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".shutdown_lint_cache", "node_modules"}
# the fix run's summary line: "Found 23 findings (21 fixed, 2 remaining)." or "Fixed 21 findings."
FIXED_RES = (re.compile(r"\((\d+) fixed, \d+ remaining\)"), re.compile(r"Fixed (\d+) findings?"))


class AuditError(Exception):
    """A failure that ends the run with a message (no traceback)."""


# --------------------------------------------------------------------------- text helpers

def decode(data: bytes) -> str:
    """Bytes to text as Python reads source (BOM, coding cookie), never failing."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        return data.decode("utf-8", errors="replace")


def read_text(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as fh:
            return decode(fh.read())
    except OSError:
        return None


def apply_edits(text: str, edits: list[dict]) -> str:
    """Apply JSON fix edits (1-based lines and columns, end exclusive; lines as ``str.splitlines``
    counts them, which is how the tool numbers them; ``line`` or, in older output, ``row``) to
    ``text``, last edit first."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(loc: dict) -> int:
        row, col = int(loc["line"] if "line" in loc else loc["row"]), int(loc["column"])
        if row - 1 >= len(lines):
            return len(text)
        return starts[row - 1] + col - 1

    spans = sorted(((offset(e["location"]), offset(e["end_location"]), e.get("content", "")) for e in edits),
                   reverse=True)
    out = text
    last_start = None
    for lo, hi, content in spans:
        if last_start is not None and hi > last_start:
            raise AuditError("overlapping edits")
        out = out[:lo] + content + out[hi:]
        last_start = lo
    return out


def unified(path: str, old: str, new: str, context: int = 5) -> str:
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"a/{path}", tofile=f"b/{path}", n=context)
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)


def parse_diff(text: str) -> dict[str, list[tuple[int, list[str]]]]:
    """A unified diff as ``{path: [(old_start, [hunk lines with their ' '/'-'/'+' prefix])]}``;
    a ``\\ No newline at end of file`` marker strips the newline of the line before it."""
    files: dict[str, list[tuple[int, list[str]]]] = {}
    cur: Optional[list] = None
    hunk: Optional[list[str]] = None
    for line in text.split("\n"):
        if line.startswith("--- a/"):
            hunk = None
            continue
        if line.startswith("+++ b/"):
            cur = files.setdefault(line[6:], [])
            hunk = None
            continue
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if m and cur is not None:
            hunk = []
            start = int(m.group(1))
            if m.group(2) == "0":
                start += 1  # an empty old range names the line before it
            cur.append((start, hunk))
            continue
        if hunk is None:
            continue
        if line.startswith("\\"):
            if hunk:
                hunk[-1] = hunk[-1][:-1] if hunk[-1].endswith("\n") else hunk[-1]
            continue
        if line[:1] in (" ", "-", "+"):
            hunk.append(line + "\n")
    return files


def patch_text(old: str, hunks: list[tuple[int, list[str]]]) -> str:
    """Apply parsed hunks to ``old`` strictly (context and removed lines must match)."""
    a = old.split("\n")
    a = [x + "\n" for x in a[:-1]] + ([a[-1]] if a[-1] else [])
    out: list[str] = []
    pos = 0
    for start, lines in hunks:
        i = start - 1
        if i < pos:
            raise AuditError(f"hunk at line {start} overlaps the one before it")
        out.extend(a[pos:i])
        for line in lines:
            tag, body = line[0], line[1:]
            if tag in (" ", "-"):
                if i >= len(a) or a[i] != body:
                    raise AuditError(f"hunk at line {start} does not match the original at line {i + 1}")
                i += 1
                if tag == " ":
                    out.append(body)
            else:
                out.append(body)
        pos = i
    out.extend(a[pos:])
    return "".join(out)


# --------------------------------------------------------------------------- checks

def syntax_problem(text: str, path: str) -> Optional[str]:
    """None when ``text`` parses with ``ast.parse`` and compiles; else which step failed and why."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text, path)
        except (SyntaxError, ValueError) as e:
            return f"ast.parse: {e}"
        try:
            compile(tree, path, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as e:
            return f"compile: {e}"
    return None


def _pyflakes():
    try:
        from pyflakes import checker, messages  # noqa: F401
        return checker, messages
    except ImportError:
        return None


_FLAKE_KINDS = ("UndefinedName", "UndefinedLocal", "UndefinedExport", "ImportShadowedByLoopVar",
                "RedefinedWhileUnused")


def flake_names(text: str, path: str) -> Optional[Counter]:
    """pyflakes' undefined-name and shadowing messages of ``text`` as a Counter of
    ``(kind, name)``; None when pyflakes is missing or the text does not parse."""
    mod = _pyflakes()
    if mod is None:
        return None
    checker, _ = mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(text, path)
        except (SyntaxError, ValueError):
            return None
        w = checker.Checker(tree, filename=path)
    out: Counter = Counter()
    for m in w.messages:
        kind = type(m).__name__
        if kind in _FLAKE_KINDS:
            out[(kind, str(m.message_args[0]) if m.message_args else "")] += 1
    return out


def _bound_names(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                names.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
        elif hasattr(ast, "MatchAs") and isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
    return names


def _loaded_names(tree: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def new_undefined(old: str, new: str, path: str) -> tuple[list[str], str]:
    """Names the fix made undefined (or shadowed), and which checker said so."""
    a, b = flake_names(old, path), flake_names(new, path)
    if a is not None and b is not None:
        return sorted(f"{kind} {name}" for (kind, name), n in (b - a).items()), "pyflakes"
    try:
        ta, tb = ast.parse(old), ast.parse(new)
    except (SyntaxError, ValueError):
        return [], "ast"
    introduced = _loaded_names(tb) - _loaded_names(ta)
    known = _bound_names(tb) | set(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__",
                                                      "__builtins__", "__loader__", "__package__"}
    return sorted(f"UndefinedName {n}" for n in introduced - known), "ast"


def _dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _guard_calls(tree: ast.AST) -> list[tuple[str, ast.Call, bool]]:
    """Every ``runtime_guard.X(...)`` call: (dotted name, call, whether it is awaited)."""
    awaited = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Await)}
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            name = _dotted(n.func)
            if name and name.startswith("runtime_guard."):
                out.append((name, n, id(n) in awaited))
    return out


_RESOLVED: dict[str, object] = {}


def _resolve(name: str):
    """The object ``runtime_guard.a.b`` names, imported as the fixed program would; an
    ``AuditError`` saying why not."""
    if name not in _RESOLVED:
        import importlib
        import inspect  # noqa: F401

        parts = name.split(".")
        try:
            obj = importlib.import_module(parts[0])
            for i, attr in enumerate(parts[1:], 1):
                try:
                    obj = getattr(obj, attr)
                except AttributeError:
                    obj = importlib.import_module(".".join(parts[:i + 1]))
            _RESOLVED[name] = obj
        except Exception as e:  # an ImportError, or whatever the module raised on import
            _RESOLVED[name] = AuditError(f"{type(e).__name__}: {e}")
    obj = _RESOLVED[name]
    if isinstance(obj, AuditError):
        raise obj
    return obj


def guard_api(old: str, new: str) -> tuple[list[str], Counter]:
    """The runtime_guard calls a fix introduced: each must resolve, its arguments must bind to
    the helper's signature, and it must be awaited exactly when the helper is a coroutine
    function. Returns (problems, count of the introduced calls by helper)."""
    import inspect

    try:
        before = Counter(name for name, _, _ in _guard_calls(ast.parse(old)))
        calls = _guard_calls(ast.parse(new))
    except (SyntaxError, ValueError):
        return [], Counter()
    after = Counter(name for name, _, _ in calls)
    introduced = after - before
    problems = []
    for name, call, awaited in calls:
        if name not in introduced:
            continue
        where = f"line {call.lineno}: {name}"
        try:
            obj = _resolve(name)
        except AuditError as e:
            problems.append(f"{where} does not resolve ({e})")
            continue
        is_coro = inspect.iscoroutinefunction(obj)
        if is_coro and not awaited:
            problems.append(f"{where} is a coroutine function, called without await")
        elif awaited and not is_coro and not inspect.isclass(obj):
            problems.append(f"{where} is awaited but is not a coroutine function")
        if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
            continue
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            continue
        try:
            sig.bind(*[object()] * len(call.args), **{k.arg: object() for k in call.keywords})
        except TypeError as e:
            problems.append(f"{where}: arguments do not bind to {name}{sig} ({e})")
    return problems, introduced


def enclosing(tree: Optional[ast.AST], line: int) -> tuple[str, int, int]:
    """The innermost def/class around ``line``: (qualified name, first line, last line)."""
    best = ("<module>", 1, 10**9)
    if tree is None:
        return best

    def walk(node, prefix):
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                last = getattr(child, "end_lineno", child.lineno) or child.lineno
                name = f"{prefix}{child.name}"
                if first <= line <= last:
                    kind = "class" if isinstance(child, ast.ClassDef) else (
                        "async def" if isinstance(child, ast.AsyncFunctionDef) else "def")
                    best = (f"{kind} {name}", first, last)
                walk(child, name + ".")
            else:
                walk(child, prefix)

    walk(tree, "")
    return best


# --------------------------------------------------------------------------- running the linter

def run_linter(cmd: list[str], cwd: str, timeout: float) -> subprocess.CompletedProcess:
    try:
        # bytes, decoded here: text=True would turn the CRLF of a diff's lines into LF
        raw = subprocess.run(cmd, cwd=cwd, capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise AuditError(f"`{' '.join(cmd)}` ran past {timeout:.0f} s in {cwd}") from None
    except OSError as e:
        raise AuditError(f"cannot run `{' '.join(cmd)}`: {e}") from None
    proc = subprocess.CompletedProcess(raw.args, raw.returncode, raw.stdout.decode("utf-8", errors="replace"),
                                       raw.stderr.decode("utf-8", errors="replace"))
    if proc.returncode not in (0, 1) or "Traceback (most recent call last)" in proc.stderr:
        tail = "\n".join(proc.stderr.splitlines()[-15:])
        raise AuditError(f"`{' '.join(cmd)}` in {cwd} exited {proc.returncode}:\n{tail}")
    return proc


def load_json(proc: subprocess.CompletedProcess, what: str) -> list[dict]:
    try:
        data = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError as e:
        raise AuditError(f"{what}: the JSON output does not parse ({e})") from None
    if not isinstance(data, list):
        raise AuditError(f"{what}: the JSON output is not a list")
    return data


def copy_tree(src: str, dst: str) -> None:
    shutil.copytree(src, dst, symlinks=True, ignore=lambda d, names: [n for n in names if n in SKIP_DIRS])


def py_files(root: str) -> dict[str, str]:
    """Relative path -> sha256 of every ``.py``/``.pyi`` file under ``root``."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if x not in SKIP_DIRS]
        for f in files:
            if f.endswith((".py", ".pyi")):
                p = os.path.join(d, f)
                if os.path.islink(p):
                    continue
                with open(p, "rb") as fh:
                    out[os.path.relpath(p, root).replace(os.sep, "/")] = hashlib.sha256(fh.read()).hexdigest()
    return out


def git_commit(path: str) -> Optional[str]:
    try:
        proc = subprocess.run(["git", "-C", path, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    top = subprocess.run(["git", "-C", path, "rev-parse", "--show-toplevel"], capture_output=True, text=True)
    if os.path.realpath(top.stdout.strip()) != os.path.realpath(path):
        return None  # a folder inside some other repository: its HEAD says nothing about this code base
    return proc.stdout.strip()


# --------------------------------------------------------------------------- one code base

def audit_one(name: str, src: str, work: str, linter: list[str], jobs: int, timeout: float,
              commit: Optional[str]) -> dict:
    t0 = time.monotonic()
    base = os.path.join(work, name)
    fixed, fixed2 = os.path.join(base, "fixed"), os.path.join(base, "fixed2")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)
    copy_tree(src, fixed)
    common = [*linter, "--no-cache", "--jobs", str(jobs), "--unsafe-fixes", "."]
    before_hashes = py_files(fixed)

    findings = load_json(run_linter([*common, "--output-format", "json"], fixed, timeout), f"{name}: lint")
    # entries with no code are files the linter could not analyse (newer JSON output lists them)
    unanalysed = [f"{f.get('path')}: {f.get('message', '')}" for f in findings if not f.get("code")]
    findings = [f for f in findings if f.get("code")]
    diff = run_linter([*common, "--diff"], fixed, timeout).stdout
    if py_files(fixed) != before_hashes:
        raise AuditError(f"{name}: the lint or --diff run changed files")
    fix = run_linter([*common, "--fix", "--output-format", "concise"], fixed, timeout)
    applied = None
    for pattern in FIXED_RES:
        m = pattern.search(fix.stdout + fix.stderr)
        if m:
            applied = int(m.group(1))
            break
    copy_tree(fixed, fixed2)
    left = load_json(run_linter([*common, "--fix", "--output-format", "json"], fixed2, timeout),
                     f"{name}: second fix")
    left = [f for f in left if f.get("code")]
    for tree_dir, what in ((fixed, "fixed"), (fixed2, "fixed2")):
        with open(os.path.join(base, f"{what}.hashes.json"), "w") as fh:
            json.dump(py_files(tree_dir), fh)
    with open(os.path.join(base, "findings.json"), "w") as fh:
        json.dump(findings, fh, indent=1)
    with open(os.path.join(base, "left.json"), "w") as fh:
        json.dump(left, fh, indent=1)
    with open(os.path.join(base, "fix.diff"), "w") as fh:
        fh.write(diff)

    after = py_files(fixed)
    after2 = py_files(fixed2)
    changed = sorted(p for p in after if before_hashes.get(p) != after[p])
    problems: dict[str, list] = defaultdict(list)
    if set(after) != set(before_hashes):
        problems["files added or removed by --fix"] = sorted(set(after) ^ set(before_hashes))
    problems["not idempotent (second --fix changed)"] = sorted(p for p in after2 if after2[p] != after.get(p))

    # --diff equals --fix
    parsed = parse_diff(diff)
    for p in sorted(set(parsed) | set(changed)):
        if p not in parsed:
            problems["--diff differs from --fix"].append(f"{p}: changed by --fix, absent from --diff")
            continue
        old = read_text(os.path.join(src, p))
        new = read_text(os.path.join(fixed, p))
        if old is None or new is None:
            problems["--diff differs from --fix"].append(f"{p}: in --diff, not a file")
            continue
        try:
            patched = patch_text(old, parsed[p])
        except AuditError as e:
            problems["--diff differs from --fix"].append(f"{p}: {e}")
            continue
        if patched != new:
            problems["--diff differs from --fix"].append(f"{p}: the diff applied to the original is not the fixed file")

    # changed files: parse/compile, undefined names
    original_fails = []
    flakes_tool = None
    helpers: Counter = Counter()
    for p in changed:
        old = read_text(os.path.join(src, p)) or ""
        new = read_text(os.path.join(fixed, p)) or ""
        bad = syntax_problem(new, p)
        if bad:
            if syntax_problem(old, p):
                original_fails.append(p)
            else:
                problems["fixed file does not parse/compile"].append(f"{p}: {bad}")
            continue
        names, flakes_tool = new_undefined(old, new, p)
        for n in names:
            problems["new undefined or shadowed name"].append(f"{p}: {n}")
        api_problems, used = guard_api(old, new)
        helpers.update(used)
        for x in api_problems:
            problems["runtime_guard call does not resolve, bind or await right"].append(f"{p}: {x}")

    # each finding's fix alone
    trees: dict[str, Optional[ast.AST]] = {}
    texts: dict[str, Optional[str]] = {}
    records = []
    for f in findings:
        path = f.get("path", "")
        rel = os.path.normpath(path).replace(os.sep, "/")
        if rel not in texts:
            texts[rel] = read_text(os.path.join(src, rel))
            try:
                trees[rel] = ast.parse(texts[rel] or "") if texts[rel] is not None else None
            except (SyntaxError, ValueError):
                trees[rel] = None
        text = texts[rel]
        fix_ = f.get("fix") or None
        scope, s_first, s_last = enclosing(trees[rel], int(f.get("line", 1)))
        rec = {"codebase": name, "path": rel, "line": f.get("line"), "column": f.get("column"),
               "code": f.get("code"), "message": f.get("message", ""), "scope": scope,
               "scope_lines": [s_first, min(s_last, 10**6)],
               "applicability": (fix_ or {}).get("applicability") or "none",
               "fix_message": (fix_ or {}).get("message", ""), "hunk": "", "alone": "ok"}
        if fix_ and text is not None:
            try:
                alone = apply_edits(text, fix_.get("edits", []))
            except (AuditError, KeyError, TypeError, ValueError) as e:
                rec["alone"] = f"edits do not apply: {e}"
                problems["a fix alone does not apply/parse"].append(f"{rel}:{f.get('line')} {f.get('code')}: {e}")
            else:
                rec["hunk"] = unified(f"{name}/{rel}", text, alone)
                bad = syntax_problem(alone, rel)
                if bad and not syntax_problem(text, rel):
                    rec["alone"] = bad
                    problems["a fix alone does not apply/parse"].append(f"{rel}:{f.get('line')} {f.get('code')}: {bad}")
        records.append(rec)

    # where fixes of several rules meet in one function: the --fix result there
    combined = []
    by_scope: dict[tuple, set] = defaultdict(set)
    for r in records:
        if r["applicability"] != "none":
            by_scope[(r["path"], r["scope"], tuple(r["scope_lines"]))].add(r["code"])
    for (rel, scope, (lo, hi)), codes in sorted(by_scope.items()):
        if len(codes) < 2 or scope == "<module>":
            continue
        old = texts.get(rel) or ""
        new = read_text(os.path.join(fixed, rel)) or ""
        combined.append({"codebase": name, "path": rel, "scope": scope, "codes": sorted(codes),
                         "diff": _scope_diff(f"{name}/{rel}", old, new, lo, hi)})

    return {
        "name": name, "source": os.path.abspath(src), "commit": commit, "py_files": len(before_hashes),
        "findings": len(findings), "fixable": sum(1 for r in records if r["applicability"] != "none"),
        "fixes_applied": applied, "findings_left": len(left), "changed_files": len(changed),
        "original_fails_too": original_fails, "unanalysed": unanalysed, "undefined_checker": flakes_tool or ("pyflakes" if _pyflakes() else "ast"),
        "problems": {k: v for k, v in problems.items() if v}, "records": records, "combined": combined,
        "left_codes": dict(Counter(d.get("code") for d in left)), "helpers": dict(sorted(helpers.items())),
        "seconds": round(time.monotonic() - t0, 1),
    }


def _scope_diff(path: str, old: str, new: str, lo: int, hi: int) -> str:
    """The hunks of the whole-file diff that touch original lines ``lo..hi``."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out = []
    for group in difflib.SequenceMatcher(None, a, b, autojunk=False).get_grouped_opcodes(3):
        i1, i2 = group[0][1], group[-1][2]
        if not any(tag != "equal" and x1 <= hi and max(x2, x1 + 1) >= lo for tag, x1, x2, _, _ in group):
            continue  # no change of this group touches original lines lo..hi (0-based [lo-1, hi))
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@\n")
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out.extend(" " + x for x in a[x1:x2])
                continue
            out.extend("-" + x for x in a[x1:x2])
            out.extend("+" + y for y in b[y1:y2])
    body = "".join(x if x.endswith("\n") else x + "\n" for x in out)
    return f"--- a/{path}\n+++ b/{path}\n{body}" if body else ""


# --------------------------------------------------------------------------- reports

def rule_table(results: list[dict], sample: int, sample_over: int, seed: int) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for res in results:
        for r in res["records"]:
            row = rows.setdefault(r["code"], {"findings": 0, "safe": 0, "unsafe": 0, "none": 0})
            row["findings"] += 1
            row[r["applicability"] if r["applicability"] in ("safe", "unsafe") else "none"] += 1
    for code, row in rows.items():
        fixes = row["safe"] + row["unsafe"]
        if fixes >= sample_over:
            row["read"] = sorted(random.Random(f"{seed}:{code}").sample(range(fixes), min(sample, fixes)))
        else:
            row["read"] = "all"
    return dict(sorted(rows.items()))


def write_hunks(out: str, results: list[dict]) -> None:
    hdir = os.path.join(out, "hunks")
    shutil.rmtree(hdir, ignore_errors=True)
    os.makedirs(hdir)
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for res in results:
        for r in res["records"]:
            by_rule[r["code"]].append(r)
    data = {}
    for code, recs in sorted(by_rule.items()):
        fixed_ = [r for r in recs if r["applicability"] != "none"]
        nofix = [r for r in recs if r["applicability"] == "none"]
        data[code] = fixed_ + nofix
        parts = [f"# {code}: {len(recs)} findings, {len(fixed_)} with a fix, {len(nofix)} without\n"
                 f"# each fix's own edits applied alone to the original file\n\n"]
        for i, r in enumerate(fixed_):
            r["index"] = i
            parts.append(f"=== {code} #{i} [{r['applicability']}] {r['codebase']} {r['path']}:{r['line']}:{r['column']}"
                         f" in {r['scope']}\n{r['message']}\nfix: {r['fix_message']}\n")
            if r["alone"] != "ok":
                parts.append(f"!!! {r['alone']}\n")
            parts.append(r["hunk"] + "\n")
        if nofix:
            parts.append(f"=== findings with no fix ({len(nofix)})\n")
            for r in nofix:
                parts.append(f"- {r['codebase']} {r['path']}:{r['line']}:{r['column']} in {r['scope']}: {r['message']}\n")
        with open(os.path.join(hdir, f"{code}.txt"), "w", encoding="utf-8") as fh:
            fh.write("".join(parts))
    with open(os.path.join(hdir, "all.json"), "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
    parts = ["# functions where fixes of two or more rules land, as --fix made them\n\n"]
    for res in results:
        for c in res["combined"]:
            parts.append(f"=== {' + '.join(c['codes'])} {c['codebase']} {c['path']} in {c['scope']}\n{c['diff']}\n")
    with open(os.path.join(hdir, "_combined.txt"), "w", encoding="utf-8") as fh:
        fh.write("".join(parts))


def summary_markdown(results: list[dict], rows: dict[str, dict], header: str) -> str:
    lines = [header, "",
             "| code base | commit | .py files | findings | fixable | fixes applied | changed files | findings left | checks |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        checks = "pass" if not r["problems"] else "FAIL: " + "; ".join(f"{k} ({len(v)})" for k, v in r["problems"].items())
        lines.append(f"| {r['name']} | {(r['commit'] or '-')[:12]} | {r['py_files']} | {r['findings']} | {r['fixable']} | "
                     f"{'-' if r['fixes_applied'] is None else r['fixes_applied']} | {r['changed_files']} | "
                     f"{r['findings_left']} | {checks} |")
    tot = {k: sum(r[k] or 0 for r in results) for k in ("py_files", "findings", "fixable", "fixes_applied",
                                                         "changed_files", "findings_left")}
    lines.append(f"| **all** | | {tot['py_files']} | {tot['findings']} | {tot['fixable']} | {tot['fixes_applied']} | "
                 f"{tot['changed_files']} | {tot['findings_left']} | |")
    lines += ["", "| rule | findings | safe fixes | unsafe fixes | no fix | read |", "| --- | --- | --- | --- | --- | --- |"]
    for code, row in rows.items():
        read = row["read"] if row["read"] == "all" else "sample: " + " ".join(f"#{i}" for i in row["read"])
        lines.append(f"| {code} | {row['findings']} | {row['safe']} | {row['unsafe']} | {row['none']} | {read} |")
    t = {k: sum(row[k] for row in rows.values()) for k in ("findings", "safe", "unsafe", "none")}
    lines.append(f"| **all** | {t['findings']} | {t['safe']} | {t['unsafe']} | {t['none']} | |")
    helpers: Counter = Counter()
    for r in results:
        helpers.update(r.get("helpers", {}))
    if helpers:
        lines.append("\nruntime_guard calls the fixes introduce (each resolved, bound to its signature, awaited "
                     "exactly when a coroutine function): " + ", ".join(f"`{k}` {v}" for k, v in sorted(helpers.items())))
    for r in results:
        if r.get("unanalysed"):
            lines.append(f"\n{r['name']}: files the linter could not analyse ({len(r['unanalysed'])}): "
                         + "; ".join(r["unanalysed"][:10]) + (" ..." if len(r["unanalysed"]) > 10 else ""))
        if r["original_fails_too"]:
            lines.append(f"\n{r['name']}: changed files whose original does not compile under this Python either "
                         f"(not counted as a fix problem): {', '.join(r['original_fails_too'])}")
        for k, v in r["problems"].items():
            lines.append(f"\n{r['name']}: {k}:")
            lines.extend(f"  - {x}" for x in v[:50])
            if len(v) > 50:
                lines.append(f"  - ... {len(v) - 50} more")
    return "\n".join(lines) + "\n"


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="PATH", help="checked-out code bases (only read)")
    ap.add_argument("--out", required=True, help="folder for hunks/, summary.md and summary.json")
    ap.add_argument("--scratch", help="scratch folder for the copies (kept); default: a temporary folder, removed")
    ap.add_argument("--jobs", "-j", type=int, default=1, help="--jobs for shutdown-lint (default 1)")
    ap.add_argument("--linter", default=f"{sys.executable} -m shutdown_lint",
                    help="the command to run (default: this Python's shutdown_lint)")
    ap.add_argument("--commit", action="append", default=[], metavar="NAME=SHA",
                    help="record the commit of a code base that is not a git work tree")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds for one linter run")
    ap.add_argument("--sample", type=int, default=50, help="hunks to draw for reading per large rule")
    ap.add_argument("--sample-over", type=int, default=100, help="rules with this many fixes or more are sampled")
    ap.add_argument("--seed", type=int, default=20261126)
    return ap.parse_args(argv)


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    commits = {}
    for c in args.commit:
        if "=" not in c:
            print(f"fix_audit: error: --commit wants NAME=SHA, got {c!r}", file=sys.stderr)
            return 2
        k, v = c.split("=", 1)
        commits[k] = v
    names: dict[str, str] = {}
    for p in args.paths:
        if not os.path.isdir(p):
            print(f"fix_audit: error: {p} is not a folder", file=sys.stderr)
            return 2
        name = os.path.basename(os.path.abspath(p)) or "root"
        k, i = name, 2
        while k in names:
            k, i = f"{name}-{i}", i + 1
        names[k] = p
    out = os.path.abspath(args.out)
    for p in names.values():
        ap_ = os.path.abspath(p)
        if out == ap_ or out.startswith(ap_ + os.sep):
            print(f"fix_audit: error: --out {args.out} lies inside the code base {p}", file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)
    scratch = args.scratch or tempfile.mkdtemp(prefix="fix_audit_")
    os.makedirs(scratch, exist_ok=True)
    linter = shlex.split(args.linter)
    results = []
    failed = False
    try:
        for name, p in names.items():
            print(f"fix_audit: {name} ...", file=sys.stderr, flush=True)
            commit = commits.get(name) or git_commit(p)
            try:
                res = audit_one(name, p, scratch, linter, args.jobs, args.timeout, commit)
            except (AuditError, OSError) as e:  # this code base is reported as failed; the others go on
                print(f"fix_audit: error: {name}: {e}", file=sys.stderr, flush=True)
                failed = True
                res = {"name": name, "source": os.path.abspath(p), "commit": commit, "py_files": 0, "findings": 0,
                       "fixable": 0, "fixes_applied": None, "findings_left": 0, "changed_files": 0,
                       "original_fails_too": [], "unanalysed": [], "problems": {"the audit failed": [str(e)]}, "records": [],
                       "combined": [], "left_codes": {}, "helpers": {}, "seconds": 0}
            else:
                print(f"fix_audit: {name}: {res['findings']} findings, {res['fixes_applied']} fixes applied, "
                      f"{res['findings_left']} left, {res['seconds']} s", file=sys.stderr, flush=True)
            results.append(res)
    finally:
        if not args.scratch:
            shutil.rmtree(scratch, ignore_errors=True)
    rows = rule_table(results, args.sample, args.sample_over, args.seed)
    write_hunks(out, results)
    version = subprocess.run([*linter, "--version"], capture_output=True, text=True).stdout.strip()
    header = (f"fix audit: `{' '.join(linter)} --fix --unsafe-fixes --no-cache --jobs {args.jobs}` ({version}), "
              f"Python {sys.version.split()[0]}, undefined names by "
              f"{'pyflakes' if _pyflakes() else 'the ast check (pyflakes not importable)'}; seed {args.seed}")
    md = summary_markdown(results, rows, header)
    with open(os.path.join(out, "summary.md"), "w", encoding="utf-8") as fh:
        fh.write(md)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as fh:
        json.dump({"header": header, "rules": rows,
                   "codebases": [{k: v for k, v in r.items() if k not in ("records", "combined")} for r in results]},
                  fh, indent=1)
    print(md)
    if failed:
        return 2
    return 1 if any(r["problems"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
