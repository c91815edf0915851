"""The project index decides from a module's text, without its summary (an ``ast`` parse), that
the last step of a resolution cannot give a function (``ProjectIndex.no_function_in``).

The decision must be exact (what the summary would have said) and must stay a dependency: a
result that relied on it depends on that module's text, so a warm run re-lints the file when the
text changes (``index/store.py``: text stamps).
"""

from __future__ import annotations

import ast
import glob
import json
import os
import subprocess
import sys

import pytest

from shutdown_lint.cache import read_index
from shutdown_lint.index.project import ProjectFunction, ProjectIndex
from shutdown_lint.index.text_facts import _chain_firsts, _may_hold_instance, may_define, may_import
from shutdown_lint.index.store import TEXT, stale
from shutdown_lint.index.summary import _local_types, summarize
from shutdown_lint.index import tails
from shutdown_lint.index.tails import process_tail

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: (source, name, may an import bind it?, may a def define it?)
CASES = [
    ("import N\n", "N", True, False),
    ("import N.sub\n", "N", True, False),
    ("import a, N.sub\n", "N", True, False),
    ("import a as b, N.sub\n", "N", True, False),
    ("import a.N\n", "N", False, False),
    ("import a as N\n", "N", True, False),
    ("from m import N\n", "N", True, False),
    ("from m import a as N  # alias\n", "N", True, False),
    ("from . import N\n", "N", True, False),
    ("from .import N\n", "N", True, False),
    ("from m import (a,\n    N,\n)\n", "N", True, False),
    ("from m import (a,  # a comment\n    N)\n", "N", True, False),
    ("from m import (N)\n", "N", True, False),
    ("from m import \\\n    N\n", "N", True, False),
    ("from m import N;x = 1\n", "N", True, False),
    ("if x: from m import N\n", "N", True, False),
    ("x = 1; import N\n", "N", True, False),
    ("try:\n    import N\nexcept ImportError:\n    N = None\n", "N", True, False),
    ("def f():\n    from m import N\n    return N()\n", "N", True, False),
    ("from .N import x\n", "N", False, False),
    ("def N():\n    pass\n", "N", False, True),
    ("async  def N():\n    pass\n", "N", False, True),
    ("def \\\n    N():\n    pass\n", "N", False, True),
    ("class N:\n    def N(self):\n        pass\n", "N", False, True),
    ("class N(Base):\n    pass\n", "N", False, False),
    ("N = Cls()\nN: int = 3\ny = N\nz = x.N\nN()\nundef N\n", "N", False, False),
    ("__all__ = [\n    N,\n]\n", "N", True, False),  # a list like an import's: a superset
    ("'''\nfrom m import N\n'''\n", "N", True, False),  # in a string: a superset
]


@pytest.mark.parametrize("source,name,imports,defines", CASES)
def test_may_import_and_may_define_on_each_form(source, name, imports, defines):
    data = source.encode()
    assert may_import(data, name) is imports
    assert may_define(data, name) is defines
    s = summarize(data)
    if s is not None:  # what the summary binds, the text test must allow
        bound = set(s["imports"]) | {k for fn in s["functions"].values() for k in fn["imports"]}
        assert name not in bound or imports
        assert name not in s["functions"] or defines


def _modules(top: str, limit: int) -> list[str]:
    out = []
    for d, _, files in sorted(os.walk(top)):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    return out[:limit]


@pytest.mark.parametrize("top", ["shutdown_lint", "rules", "libcst", "asyncio"])
def test_every_binding_of_real_modules_is_allowed_by_the_text_tests(top):
    """On real code: each name a summary binds by an import (module level or in a function) is
    one ``may_import`` allows, each module-level function one ``may_define`` allows."""
    if top in ("shutdown_lint", "rules"):
        root = os.path.join(REPO, top)
    else:
        root = os.path.dirname(__import__(top).__file__)
    checked = 0
    for path in _modules(root, 250):
        with open(path, "rb") as fh:
            data = fh.read()
        s = summarize(data, path)
        if s is None:
            continue
        for name in set(s["imports"]) | {k for fn in s["functions"].values() for k in fn["imports"]}:
            assert may_import(data, name), (path, name)
            checked += 1
        for name in s["functions"]:
            assert may_define(data, name), (path, name)
            checked += 1
    assert checked > 100


def _write(root, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


@pytest.mark.parametrize("text,words,decided", [
    ("def tidy():\n    print('bye')\n", ("POOL",), True),  # a def that spells no word
    ("def tidy():\n    print('bye')\n", (), False),  # a function, and functions are asked for
    ("class tidy:\n    pass\n", (), True),  # a class is not a function
    ("def tidy():\n    POOL.shutdown()\n", ("POOL",), False),  # it spells the word
    ("from pkg.other import tidy\n", ("POOL",), False),  # imported: the function is elsewhere
    ("from pkg.other import *\n", ("POOL",), False),  # a star import may bring it
    ("# -*- coding: latin-1 -*-\ndef tidy():\n    pass\n", ("POOL",), False),  # bytes != text
    ("def \uff54idy():\n    pass\n", (), False),  # NFKC makes this ``tidy``
])
def test_no_function_in_decides_only_what_the_summary_would(tmp_path, text, words, decided):
    _write(str(tmp_path), {"pkg/__init__.py": "", "pkg/helpers.py": text})
    path = str(tmp_path / "pkg" / "helpers.py")
    index = ProjectIndex([str(tmp_path / "pkg")])
    stamp = index.no_function_in(path, "tidy", words)
    assert (stamp is not None) is decided
    if stamp is not None:  # what the summary says: no function, or one that spells no word
        assert stamp[2].startswith(TEXT)
        hit = ProjectIndex([str(tmp_path / "pkg")]).resolve("pkg.helpers.tidy")
        assert not isinstance(hit, ProjectFunction) or (words and not any(
            w in json.dumps(c) for c in hit.info["calls"] for w in words))


def test_resolution_with_the_text_gate_gives_the_same_functions():
    """Every module-level name of every module of a real package (libcst), resolved with the
    gate (function-only) and without it: the same function, or None where there was none."""
    import libcst

    root = os.path.dirname(libcst.__file__)
    plain, gated = ProjectIndex([root]), ProjectIndex([root])
    compared = skipped = 0
    for path in _modules(root, 120):
        names = plain.module_names(path)
        s = plain.summary(path)
        if not names or s is None:
            continue
        for name in sorted({*s["functions"], *s["classes"], *s["vars"], *s["imports"]}):
            full = f"{names[0]}.{name}"
            want = plain.resolve(full)
            deps: dict = {}
            got = gated.resolve(full, deps, 0, ())
            if isinstance(want, ProjectFunction):
                assert isinstance(got, ProjectFunction) and (got.path, got.qualname) == (want.path, want.qualname)
            else:
                assert got is None or not isinstance(got, ProjectFunction), full
            skipped += any(isinstance(v[2], str) and v[2].startswith(TEXT) for v in deps.values())
            compared += 1
    assert compared > 300 and skipped > 0


# ---------------------------------------------------------------------- warm runs
PROJECT = {
    "pkg/__init__.py": "",
    "pkg/work.py": "from concurrent.futures import ThreadPoolExecutor\n\n"
                   "POOL = ThreadPoolExecutor(max_workers=4)\n\n\n"
                   "def submit(job):\n    return POOL.submit(job)\n",
    # imports work (it spells POOL): its teardown calls are searched; tidy() is in helpers
    "pkg/main.py": "from pkg import helpers, work\n\n\n"
                   "def main():\n    try:\n        work.submit(print)\n    finally:\n        helpers.tidy()\n",
    # spells no POOL and defines tidy itself: decided from its text, never summarised
    "pkg/helpers.py": "def tidy():\n    print('bye')\n",
}
#: tidy() now shuts the pool down (helpers still imports no pkg.work: it is no importer)
SHUTS_DOWN = "import pkg\n\n\ndef tidy():\n    pkg.work.POOL.shutdown(cancel_futures=True)\n"


def _lint(cwd: str, cache: str) -> list[tuple[str, int, str]]:
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", "SHD503",
                           "--cache-dir", cache, "--output-format", "json", "pkg"],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return [(d["path"], d["line"], d["code"]) for d in json.loads(proc.stdout or "[]")]


def _deps_of(cache: str, path: str) -> dict:
    results = glob.glob(os.path.join(cache, "results-*"))[0]
    return read_index(results)[path][3].get("deps") or {}


def test_a_module_decided_from_its_text_re_lints_its_dependents_when_it_changes(tmp_path):
    root = str(tmp_path)
    _write(root, PROJECT)
    cache = os.path.join(root, ".cache")
    work = os.path.join(root, "pkg", "work.py")
    helpers = os.path.join(root, "pkg", "helpers.py")

    assert _lint(root, cache) == [("pkg/work.py", 3, "SHD503")]
    deps = _deps_of(cache, work)
    # main.py was summarised; helpers.py was decided from its text and never parsed
    assert not deps[os.path.join(root, "pkg", "main.py")][2].startswith(TEXT)
    assert deps[helpers][2].startswith(TEXT)
    summaries = json.load(open(glob.glob(os.path.join(cache, "index-*.json"))[0]))
    assert helpers not in summaries

    # a warm run with nothing changed: the same, from the cache
    assert _lint(root, cache) == [("pkg/work.py", 3, "SHD503")]
    # the same text under a new mtime: still fresh (the stamp is refreshed, not a re-lint)
    st = os.stat(helpers)
    os.utime(helpers, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    # (the text dependency alone: the dependency on the project's files, recorded by the search of
    # work.py's importers, follows the files' stats, so a touch re-lints through it)
    from shutdown_lint.index.store import PROJECT as FILES_KEY

    changed, refreshed = stale({k: v for k, v in deps.items() if not k.startswith(FILES_KEY)}, None, lambda: None)
    assert not changed and refreshed[helpers][0] == st.st_mtime_ns + 5_000_000_000

    # between two warm runs helpers.py starts shutting the pool down: work.py is re-linted
    with open(helpers, "w", encoding="utf-8") as fh:
        fh.write(SHUTS_DOWN)
    assert stale(deps, None, lambda: None)[0]
    assert _lint(root, cache) == []
    # and back: the finding returns (work.py now depends on helpers.py's summary)
    with open(helpers, "w", encoding="utf-8") as fh:
        fh.write(PROJECT["pkg/helpers.py"] + "\n")
    assert _lint(root, cache) == [("pkg/work.py", 3, "SHD503")]


# ---------------------------------------------------------------------- process tails
@pytest.mark.parametrize("source,firsts", [
    ("log.debug('x')\n", {"log"}),
    ("a.b.debug()\nx = debug\n", {"a", "debug"}),
    ("x .  debug()\n", {"x"}),
    ("f(x).debug()\n", None),  # the summary names it by f's class, if any
    ("x[0].debug()\n", None),
    ("(x\n  .debug())\n", None),  # a chain over lines
])
def test_chain_firsts(source, firsts):
    assert _chain_firsts(source.encode(), "debug") == firsts


@pytest.mark.parametrize("source,holds", [
    ("t = Trainer()\n", True),
    ("t = pkg.Trainer(cfg)\n", True),
    ("t = await  pkg . Trainer(cfg)\n", True),
    ("a = t = Trainer()\n", True),
    ("t = a = Trainer()\n", True),
    ("t: Base = Trainer()\n", True),
    ("(t) = Trainer()\n", True),
    ("(t): Base = Trainer()\n", True),
    ("t = (\n    Trainer())\n", True),
    ("t = \\\n    Trainer()\n", True),
    ("t = logging.getLogger(__name__)\n", False),  # not capitalised: not a local type
    ("t = Trainer.create()\n", False),
    ("t == Trainer()\nt = 'x'\nf(t)\nt.fit()\nfor t in xs: pass\n", False),
    ("def f(t: int, u=3):\n    return t\n", False),
    ("def f(t: int, u=Trainer()):\n    return t\n", True),  # the annotation may go on: a superset
])
def test_may_hold_instance_allows_every_local_type(source, holds):
    assert _may_hold_instance(source.encode(), "t") is holds
    if not holds:  # the summary's local types never type it
        tree = ast.parse(source)
        assert "t" not in _local_types(tree) and all("t" not in _local_types(f) for f in ast.walk(tree)
                                                    if isinstance(f, ast.FunctionDef))


def test_process_tails_with_the_text_gate_are_the_same(monkeypatch):
    """Every module-level function of a real package (libcst) asked as a process tail with the
    gate and without it: the same chains (None included)."""
    import libcst

    root = os.path.dirname(libcst.__file__)
    targets = []
    for path in _modules(root, 400):
        s = summarize(open(path, "rb").read(), path)
        targets += [(path, q) for q in sorted((s or {}).get("functions", {}))]
    gated_index = ProjectIndex([root])
    gated = [process_tail(gated_index.view(p), p, q) for p, q in targets]
    # (the gate: ``text_facts.no_tail_call_reaches_out``, session 13; its answers are in the index's ``_no_match``)
    skipped = [k for k, v in gated_index._no_match.items() if k[1].startswith("tail:") and v is not None]
    monkeypatch.setattr(tails, "no_tail_call_reaches_out", lambda index, path, word: None)
    plain_index = ProjectIndex([root])
    plain = [process_tail(plain_index.view(p), p, q) for p, q in targets]
    assert gated == plain
    assert len(targets) > 150 and skipped
