"""Text decisions that spare a module's summary in the process-tail search (SHD202,
``text_facts.no_tail_call_reaches_out``) and in the search for a subclass made a Ray actor
elsewhere (SHD403/SHD501/SHD201 through ``_inherit_remote``, ``text_facts.no_ray_remote``).

Each must decide only what the summary would (the module's text is then the dependency: a warm
run re-lints the dependant when it changes). The project pairs below are linted through the CLI;
each also runs in process with the reading that the decision must not use (a chain read only on
its line, ``project._chain_firsts``; any import test without ``as``), which gets them wrong.
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
from shutdown_lint.index import text_facts
from shutdown_lint.index.classes import made_remote
from shutdown_lint.index.project import ProjectIndex
from shutdown_lint.index.store import TEXT, stale
from shutdown_lint.index.summary import summarize
from shutdown_lint.index.tails import process_tail
from shutdown_lint.index.text_facts import _chain_firsts, chain_firsts, may_alias, may_import, may_import_strictly

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------- the text readings
@pytest.mark.parametrize("source,kw,firsts", [
    ("log.debug('x')\n", {}, {"log"}),
    ("a.b.debug()\nx = debug\n", {}, {"a", "debug"}),
    ("a.b.debug()\nx = debug\n", {"called": True}, {"a"}),  # a read of the name is no call
    ("(a.debug)(x)\nc.debug  # note\n", {"called": True}, {"a", "c"}),
    ("(x\n  .debug())\n", {}, None),  # a line break before the dot
    ("(x.\n  debug())\n", {}, None),  # a dot ends the line before: one chain
    ("(x.  # why\n  debug())\n", {}, None),  # a dot before a comment
    ("(x.\n\n  # why\n  debug())\n", {}, None),  # a comment line between
    ("x = \\\n    a.debug()\n", {}, {"a"}),
    ("y = 1.\ndebug()\n", {}, None),  # (a float: the dot may be an attribute's; not read)
    ("# Ends a sentence.\ndebug()\n", {}, {"debug"}),  # a comment line is looked through
    ("f(x).debug()\n", {}, set()),  # f(...).debug: _callee_written records nothing
    ("F(x).debug()\n", {}, None),  # Cls(...).debug is recorded as Cls.debug
    ("F(x).debug()\n", {"dotted_only": True}, set()),  # dotted reads no call's result
    ("(F).debug()\n", {"dotted_only": True}, None),  # parentheses: dotted reads F.debug
    ("((a.b)).debug()\n", {"dotted_only": True}, None),
    ('f(x, "s").debug()\nx[0].debug()\n"`.debug()`"\n', {"dotted_only": True}, set()),
    ('f(\n  lifetime="d",\n).debug()\n', {"dotted_only": True}, set()),
    ('f(\n  lifetime="d",  # x\n).debug()\n', {"dotted_only": True}, None),  # a comment may end the line
])
def test_chain_firsts(source, kw, firsts):
    assert chain_firsts(source.encode(), "debug", **kw) == firsts


@pytest.mark.parametrize("source,name,binds", [
    ("import N\n", "N", True),
    ("import a as b, N.sub\n", "N", True),
    ("import a.b as N\n", "N", True),
    ("from m import a as N  # alias\n", "N", True),
    ("from m import (a,\n    N)\n", "N", True),
    ("from m import (\n    a,  # why (not b).\n    N,\n)\n", "N", True),
    ("from m import \\\n    N\n", "N", True),
    ("x = 1; from m import N\n", "N", True),
    ("try: import N\nexcept ImportError: pass\n", "N", True),
    ("def f():\n    from m import N\n", "N", True),
    ("f(N)\n", "N", False),
    ("g(a,\n  N)\n", "N", False),
    ("x = pkg.step(N)\nimport os\n", "N", False),
])
def test_may_import_strictly(source, name, binds):
    assert may_import_strictly(source.encode(), name) is binds
    if binds:
        assert may_import(source.encode(), name)


@pytest.mark.parametrize("source,binds", [
    ("import ray as N\n", True),
    ("import ray.actor as N, os\n", True),
    ("from ray import (actor as\n    N)\n", True),
    ("from ray import (actor as  # why\n    N)\n", True),
    ("with open(p) as N:\n    pass\n", False),
    ("except E as N:\n", False),
    ("such as N.x\n", False),
])
def test_may_alias(source, binds):
    assert may_alias(source.encode(), "N") is binds


def _real_modules(limit: int) -> list[str]:
    import libcst

    out = []
    for d, _, files in os.walk(os.path.dirname(libcst.__file__)):
        out += [os.path.join(d, f) for f in sorted(files) if f.endswith(".py")]
    return sorted(out)[:limit]


def test_every_import_binding_of_real_modules_is_allowed():
    """Every name an import statement binds (anywhere in the module) in 300 real modules."""
    checked = 0
    for path in _real_modules(300):
        data = open(path, "rb").read()
        for node in ast.walk(ast.parse(data)):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    if a.name != "*":
                        bound = a.asname or (a.name.split(".")[0] if isinstance(node, ast.Import) else a.name)
                        assert may_import_strictly(data, bound), (path, bound)
                        if a.asname:
                            assert may_alias(data, a.asname), (path, a.asname)
                        checked += 1
    assert checked > 1000


def test_every_tail_call_of_real_modules_is_read():
    """The first name of each tail call a summary records is among the chains read (or the
    chain is not read, or its first name may hold an instance: the summary names its class)."""
    from shutdown_lint.index.project import _all_functions
    from shutdown_lint.index.text_facts import _may_hold_instance

    checked = 0
    for path in _real_modules(300):
        data = open(path, "rb").read()
        s = summarize(data, path) or {"functions": {}, "classes": {}}
        tails = {t for fn in _all_functions(s) for t in fn.get("tail", ())} | set(s.get("main_tail", ()))
        for word in {t.rsplit(".", 1)[-1] for t in tails}:
            firsts = chain_firsts(data, word, called=True)
            if firsts is None or any(_may_hold_instance(data, f) for f in firsts):
                continue
            assert {t.split(".")[0] for t in tails if t.rsplit(".", 1)[-1] == word} <= firsts, (path, word)
            checked += 1
    assert checked > 200


# ---------------------------------------------------------------------- project pairs
def _write(root, files: dict) -> None:
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)


def _lint(cwd: str, select: str, *args: str) -> list[tuple[str, int, str]]:
    env = dict(os.environ, PYTHONPATH=REPO)
    for k in ("SHUTDOWN_LINT_NO_INDEX", "SHUTDOWN_LINT_CANDIDATES", "SHUTDOWN_LINT_TREE_TIER"):
        env.pop(k, None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", select,
                           "--output-format", "json", *args, "pkg"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    return sorted((d["path"], d["line"], d["code"]) for d in json.loads(proc.stdout or "[]"))


def _deps(cache: str, path: str) -> dict:
    results = next(os.path.join(cache, f) for f in os.listdir(cache) if f.startswith("results-"))
    return read_index(results)[path][3].get("deps") or {}


REPORT = ("def push():\n    pass\n\n\n"
          "def upload():\n    try:\n        push()\n    except KeyboardInterrupt:\n        print('skipped')\n")
#: the tail call of main() is ``report.upload()``, its chain broken after the dot
BROKEN_CHAIN = ("from pkg import report\n\n\n"
                "def main():\n    (report.\n     upload())\n\n\n"
                "if __name__ == '__main__':\n    main()\n")
#: ``log.upload(...)``: no call ending in ``upload`` leaves the module (decided from its text)
NO_CALL_OUT = ("from pkg import report\n\nlog = report.get_logger()\n\n\n"
               "def main():\n    log.upload('x')\n\n\n"
               "if __name__ == '__main__':\n    main()\n")
TAIL = [("pkg/report.py", 8, "SHD202")]


def test_a_tail_call_broken_over_lines_is_followed(tmp_path, monkeypatch):
    root = str(tmp_path)
    _write(root, {"pkg/__init__.py": "", "pkg/report.py": REPORT, "pkg/cli.py": BROKEN_CHAIN})
    assert _lint(root, "SHD202", "--no-cache") == TAIL
    report = os.path.join(root, "pkg", "report.py")
    index = ProjectIndex([root])
    assert process_tail(index.view(report), report, "upload") is not None
    # a chain read on its line only (``project._chain_firsts``) would take ``upload`` for a local
    # name and skip cli.py: the chain is lost
    monkeypatch.setattr(text_facts, "chain_firsts", lambda data, word, **kw: _chain_firsts(data, word))
    index = ProjectIndex([root])
    assert process_tail(index.view(report), report, "upload") is None


def test_a_caller_decided_from_its_text_re_lints_the_callee_when_it_changes(tmp_path):
    root = str(tmp_path)
    _write(root, {"pkg/__init__.py": "", "pkg/report.py": REPORT, "pkg/cli.py": NO_CALL_OUT})
    cache = os.path.join(root, ".cache")
    report, cli = os.path.join(root, "pkg", "report.py"), os.path.join(root, "pkg", "cli.py")
    assert _lint(root, "SHD202", "--cache-dir", cache) == []
    deps = _deps(cache, report)
    assert deps[cli][2].startswith(TEXT) and not stale(deps, None, lambda: None)[0]
    # main() now ends with ``report.upload()``: report.py (unchanged) is re-linted
    with open(cli, "w", encoding="utf-8") as fh:
        fh.write(NO_CALL_OUT.replace("log.upload('x')", "report.upload()"))
    assert stale(deps, None, lambda: None)[0]
    assert _lint(root, "SHD202", "--cache-dir", cache) == TAIL


BASE = ("import ray\n\n\n"
        "class Worker:\n    def connect(self, ref):\n"
        "        ray.init(address='auto', ignore_reinit_error=True)\n        return ray.get(ref)\n")
GET = [("pkg/base.py", 7, "SHD403")]
#: the subclass is made an actor through ``ray.remote`` spelled over two lines
FACTORY_BROKEN = ("import ray\n\nfrom pkg.base import Worker\n\n\n"
                  "def make():\n    class Sub(Worker):\n        pass\n\n"
                  "    return (ray.\n            remote)(Sub)\n")
#: through an alias of ray
FACTORY_ALIAS = ("import ray as r\n\nfrom pkg.base import Worker\n\n\n"
                 "def make():\n    class Sub(Worker):\n        pass\n\n"
                 "    return r.remote(Sub)\n")
#: through ``remote`` imported under another name, as a class decorator
FACTORY_DECORATOR = ("import ray\nfrom ray import remote as actor_of\n\nfrom pkg.base import Worker\n\n\n"
                     "@actor_of\nclass Sub(Worker):\n    pass\n")
#: only actor method calls spell ``remote`` (decided from the text: no actor is made here)
FACTORY_NONE = ("import ray\n\nfrom pkg.base import Worker\n\n\n"
                "def use(handle):\n    w = Worker()\n    return ray.get(handle.step.remote(w))\n")


@pytest.mark.parametrize("factory,unsound_loses_it", [(FACTORY_BROKEN, True), (FACTORY_ALIAS, True),
                                                      (FACTORY_DECORATOR, False)])
def test_a_subclass_made_an_actor_elsewhere_is_found(tmp_path, monkeypatch, factory, unsound_loses_it):
    root = str(tmp_path)
    _write(root, {"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/factory.py": factory})
    # Worker's methods run in the actor: its ray.get is no driver's
    assert _lint(root, "SHD403", "--no-cache") == []
    base = os.path.join(root, "pkg", "base.py")
    assert made_remote(ProjectIndex([root]).view(base), base, "Worker") is not None
    # the readings the decision must not use lose the actor: a chain read on its line only, or
    # an import test that does not see aliases
    monkeypatch.setattr(text_facts, "chain_firsts", lambda data, word, **kw: _chain_firsts(data, word) or set())
    monkeypatch.setattr(text_facts, "may_alias", lambda data, name: False)
    assert (made_remote(ProjectIndex([root]).view(base), base, "Worker") is None) is unsound_loses_it


def test_a_module_that_makes_no_actor_is_decided_from_its_text_and_stays_a_dependency(tmp_path):
    root = str(tmp_path)
    _write(root, {"pkg/__init__.py": "", "pkg/base.py": BASE, "pkg/factory.py": FACTORY_NONE})
    cache = os.path.join(root, ".cache")
    base, factory = os.path.join(root, "pkg", "base.py"), os.path.join(root, "pkg", "factory.py")
    assert _lint(root, "SHD403", "--cache-dir", cache) == GET
    deps = _deps(cache, base)
    assert deps[factory][2].startswith(TEXT) and not stale(deps, None, lambda: None)[0]
    for f in glob.glob(os.path.join(cache, "index-*.json")):  # (none when nothing was summarised)
        assert factory not in json.load(open(f))  # never parsed
    # the factory starts making a subclass an actor: base.py (unchanged) is re-linted
    with open(factory, "w", encoding="utf-8") as fh:
        fh.write(FACTORY_ALIAS)
    assert stale(deps, None, lambda: None)[0]
    assert _lint(root, "SHD403", "--cache-dir", cache) == []


def test_made_remote_with_the_text_gate_is_the_same(monkeypatch):
    """Every top-level class of Ray Serve's modules asked whether a subclass elsewhere makes it
    an actor, with the gate and without it: the same answers; some modules decided from text."""
    ray = pytest.importorskip("ray")
    from shutdown_lint.index import classes

    root = os.path.join(os.path.dirname(ray.__file__), "serve")
    targets = []
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(".py") and len(targets) < 150:
                path = os.path.join(d, f)
                s = summarize(open(path, "rb").read(), path) or {"classes": {}}
                targets += [(path, c) for c in sorted(s["classes"])]
    gated_index = ProjectIndex([root])
    gated = [made_remote(gated_index.view(p), p, c) for p, c in targets]
    skipped = [k for k, v in gated_index._no_match.items() if k[1] == "ray.remote" and v is not None]
    monkeypatch.setattr(classes, "no_ray_remote", lambda index, path: None)
    plain_index = ProjectIndex([root])
    plain = [made_remote(plain_index.view(p), p, c) for p, c in targets]
    assert gated == plain
    assert len(targets) > 100 and skipped  # (the positives: the project pairs above)


#: what may sit around a dot inside brackets: blanks, line ends (LF, CRLF), comments, backslashes
_SEPS = ["", " ", "\n", "  # c.\n", " # x as\n", "\\\n", "\n\n", "\r\n", " \\\r\n", "\n# c.\n"]


def _spelled(rng, chain: str) -> str:
    def sep() -> str:
        return rng.choice(_SEPS) if rng.random() < 0.3 else ""

    parts = chain.split(".")
    out = parts[0]
    for p in parts[1:]:
        out += sep() + "." + sep() + p
    if rng.random() < 0.3:
        out = "(" + rng.choice(_SEPS) + out + rng.choice(_SEPS) + ")"
    return out


def test_seeded_sweep_no_ray_remote_never_hides_an_actor():
    """Ray's ``remote`` spelled over lines, in parentheses, under aliases, as a decorator or a
    call: where the summary makes an actor, the text never decides that none is made."""
    import random

    from shutdown_lint.index.classes import _RAY_REMOTE

    rng = random.Random(7)
    decided = hits = 0
    for _ in range(1500):
        first = rng.choice(["ray", "r", "actor", "remote", "self", "x"])
        chain = "remote" if first == "remote" else first + rng.choice(["", ".actor", ".a.b"]) + ".remote"
        spelled = _spelled(rng, chain)
        imp = rng.choice(["import ray\n", "import ray as r\n", "from ray import actor\n", "from ray import remote\n",
                          "from ray import (\n  actor as x,  # c\n  remote)\n", "import os\n",
                          "from ray import remote as self\n"])
        body = rng.choice([f"def f():\n    class Sub(Base):\n        pass\n    return ({spelled})(Sub)\n",
                           f"def f():\n    class Sub(Base):\n        pass\n    return ({spelled}(num_cpus=1))(Sub)\n",
                           f"@({spelled})\nclass Sub(Base):\n    pass\n"])
        src = (imp + "from m import Base\n" + rng.choice(["", "x = 1.\n", "# note.\n"]) + body).encode()
        try:
            ast.parse(src)
        except SyntaxError:
            continue
        s = summarize(src, "t.py")
        callees = [e.partition(":")[0] for e in s.get("remote", ())] + [
            d for c in s["classes"].values() for d in c["decorators"]]
        hit = any(c.split(".")[0] in s["imports"] and s["imports"][c.split(".")[0]] + (
            "." + c.partition(".")[2] if "." in c else "") in _RAY_REMOTE for c in callees)
        firsts = chain_firsts(src, "remote", dotted_only=True)
        decides = firsts is not None and not any(
            may_import_strictly(src, f) if f in text_facts._RAY_NAMES else may_alias(src, f) for f in firsts)
        assert not (decides and hit), src
        decided += decides
        hits += hit
    assert decided > 50 and hits > 50


def test_seeded_sweep_tail_calls_are_read():
    """Tail calls spelled over lines and in parentheses: every first name the summary records is
    read (or the chain is not read)."""
    import random

    rng = random.Random(11)
    read = 0
    for _ in range(1500):
        first = rng.choice(["log", "pkg", "Cls(x)", "f(x)", "a[0]", "word", "(pkg)", "((pkg))"])
        chain = "word" if first == "word" else first + rng.choice(["", ".b", ".b.c"]) + ".word"
        call = _spelled(rng, chain) + rng.choice(["()", "(1)", " ()", rng.choice(_SEPS) + "()"])
        src = ("import pkg\n" + rng.choice(["", "x = 1.\n", "# note.\n"]) + f"def main():\n    ({call})\n").encode()
        try:
            ast.parse(src)
        except SyntaxError:
            continue
        tails = (summarize(src, "t.py") or {"functions": {}})["functions"]["main"].get("tail", [])
        firsts = chain_firsts(src, "word", called=True)
        if not tails or firsts is None:
            continue
        assert {t.split(".")[0] for t in tails} <= firsts, src
        read += 1
    assert read > 100
