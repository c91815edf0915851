"""The project index: rules that follow callees and teardowns into other modules.

``tests/data/projects/crossmodule`` is a ``src/`` layout with several packages, relative
imports, re-exports through ``__init__.py``, a namespace subpackage (``serving/``) and a
class hierarchy across files. Every cross-module family is flagged there, and each near
miss (a callee elsewhere that owns nothing, a teardown in another module on the shutdown
path, a coroutine elsewhere that swallows everything) is not.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys

import pytest

from shutdown_lint.cache import read_index
from shutdown_lint.index.project import ProjectIndex, ProjectFunction
from shutdown_lint.index.store import stale
from shutdown_lint.index.summary import summarize

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROJECT = os.path.join(REPO, "tests", "data", "projects", "crossmodule")
RULES = "SHD101,SHD102,SHD502,SHD503"

#: (file, line, code) -> a text the message must contain (the other module it relied on)
EXPECTED = {
    ("src/rollouts/generate.py", 12, "SHD101"): "src/rollouts/envs/base.py:12",  # base class, re-export
    ("src/rollouts/generate.py", 17, "SHD101"): "src/rollouts/agents/agent.py:10",  # aliased import
    ("src/rollouts/generate.py", 30, "SHD101"): "`BaseEnv.rollout`",  # self.method through a base elsewhere
    ("src/rollouts/workers/main.py", 8, "SHD102"): "src/rollouts/workers/loop.py:23",  # finally raises
    ("src/rollouts/serving/engine.py", 9, "SHD502"): "src/rollouts/serving/server.py",  # where it looked
    ("src/rollouts/serving/engine.py", 5, "SHD503"): "src/rollouts/serving/server.py",
}


def _lint(cwd: str, *args: str, env_extra: dict | None = None) -> tuple[int, list[dict], str]:
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    env.update(env_extra or {})
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--select", RULES,
                           "--output-format", "json", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=120)
    return proc.returncode, json.loads(proc.stdout or "[]"), proc.stderr


def _found(diags: list[dict]) -> dict:
    return {(d["path"], d["line"], d["code"]): d["message"] for d in diags}


@pytest.fixture()
def project(tmp_path):
    dst = tmp_path / "crossmodule"
    shutil.copytree(PROJECT, dst)
    return str(dst)


def test_every_family_flagged_and_near_misses_not(project):
    _, diags, err = _lint(project, "--no-cache", "src")
    found = _found(diags)
    assert set(found) == set(EXPECTED), (sorted(found), err)
    for key, text in EXPECTED.items():
        assert text in found[key], found[key]


def test_without_the_index_the_same_project_is_judged_wrong(project):
    """What the index changes: before, three misses and four false alarms."""
    _, diags, _ = _lint(project, "--no-cache", "src", env_extra={"SHUTDOWN_LINT_NO_INDEX": "1"})
    found = set(_found(diags))
    assert not any(k[2] == "SHD101" for k in found)
    assert ("src/rollouts/distributed/utils.py", 10, "SHD502") in found
    assert ("src/rollouts/workers/main.py", 7, "SHD102") in found


def test_jobs_and_single_files_give_the_same_findings(project):
    _, serial, _ = _lint(project, "--no-cache", "-j", "1", "src")
    _, pooled, _ = _lint(project, "--no-cache", "-j", "2", "src")
    assert _found(serial) == _found(pooled)
    # one file on its own: the index still reaches what it imports, and who imports it
    _, one, _ = _lint(project, "--no-cache", "src/rollouts/generate.py")
    assert {k for k in _found(one)} == {k for k in EXPECTED if k[0].endswith("generate.py")}
    _, utils, _ = _lint(project, "--no-cache", "src/rollouts/distributed/utils.py")
    assert utils == []  # torn down by train.py, which imports it


def test_stdin_with_and_without_a_file_name(project):
    path = os.path.join(project, "src", "rollouts", "generate.py")
    with open(path, "rb") as fh:
        data = fh.read()
    env = dict(os.environ, PYTHONPATH=REPO)
    base = [sys.executable, "-m", "shutdown_lint", "--isolated", "--select", RULES, "--output-format", "json"]
    named = subprocess.run([*base, "--stdin-filename", "src/rollouts/generate.py", "-"], input=data, cwd=project,
                           env=env, capture_output=True, timeout=60)
    assert len(json.loads(named.stdout)) == 3, named.stderr
    anonymous = subprocess.run([*base, "-"], input=data, cwd=project, env=env, capture_output=True, timeout=60)
    assert anonymous.returncode == 0 and json.loads(anonymous.stdout) == [], anonymous.stderr


def test_a_changed_dependency_re_lints_its_dependents_and_only_them(project):
    cache = os.path.join(project, ".cache")
    _, first, _ = _lint(project, "--cache-dir", cache, "src")
    assert ("src/rollouts/generate.py", 12, "SHD101") in _found(first)
    results = next(os.path.join(cache, f) for f in os.listdir(cache) if f.startswith("results-"))
    entries = read_index(results)
    gen = entries[os.path.join(project, "src", "rollouts", "generate.py")][3]
    base = os.path.join(project, "src", "rollouts", "envs", "base.py")
    unrelated = os.path.join(project, "src", "rollouts", "workers", "loop.py")
    assert base in gen["deps"] and unrelated not in gen["deps"]
    assert any(f.startswith("index-") for f in os.listdir(cache))  # summaries are cached too
    def changed(deps):
        return stale(deps, None, lambda: None)[0]

    assert not changed(gen["deps"])
    # an unrelated module changes: generate.py's dependencies are still fresh (not re-analysed)
    with open(unrelated, "a") as fh:
        fh.write("\n# touched\n")
    assert not changed(gen["deps"])
    # a dependency changes in a way its summary does not show (a comment): still fresh
    with open(base, "a") as fh:
        fh.write("\n# a comment\n")
    assert not changed(gen["deps"])
    assert stale(gen["deps"], None, lambda: None)[1][base][0] != gen["deps"][base][0]  # new stamp to store
    # the base class loses its finally: generate.py is re-analysed although it did not change
    with open(base) as fh:
        text = fh.read()
    with open(base, "w") as fh:
        fh.write(text.replace("        try:\n            return await box.run()\n        finally:\n"
                              "            await box.delete()\n", "        return await box.run()\n"))
    assert changed(gen["deps"])
    _, second, _ = _lint(project, "--cache-dir", cache, "src")
    found = _found(second)
    assert ("src/rollouts/generate.py", 12, "SHD101") not in found
    assert ("src/rollouts/generate.py", 17, "SHD101") in found  # the agent still owns a container


def test_fixes_parse_are_idempotent_and_keep_comments(project):
    def sources() -> dict[str, str]:
        out = {}
        for d, _, files in os.walk(os.path.join(project, "src")):
            for f in files:
                if f.endswith(".py"):
                    with open(os.path.join(d, f)) as fh:
                        out[os.path.join(d, f)] = fh.read()
        return out

    before = sources()
    _lint(project, "--no-cache", "--fix", "--unsafe-fixes", "--target-version", "py311", "src")
    after = sources()
    changed = [p for p in after if after[p] != before[p]]
    assert len(changed) >= 3, changed
    for path in changed:
        ast.parse(after[path])
        for line in before[path].splitlines():
            if "#" in line:
                comment = line[line.index("#"):]
                assert comment in after[path], (path, comment)
    assert "TaskGroup" in after[os.path.join(project, "src", "rollouts", "generate.py")]
    _lint(project, "--no-cache", "--fix", "--unsafe-fixes", "--target-version", "py311", "src")
    assert sources() == after


# ---------------------------------------------------------------------- the index itself


def test_resolution_through_imports_re_exports_and_bases():
    index = ProjectIndex([os.path.join(PROJECT, "src")])
    hit = index.resolve("rollouts.SandboxEnv.rollout")  # re-exported twice, defined on a base
    assert isinstance(hit, ProjectFunction) and hit.qualname == "BaseEnv.rollout"
    assert hit.path.endswith(os.path.join("envs", "base.py"))
    assert index.absolute("..agents.agent.run_agent", "rollouts.envs.base", False) == "rollouts.agents.agent.run_agent"
    assert index.absolute(".plain", "rollouts.envs", True) == "rollouts.envs.plain"
    assert index.resolve("rollouts.generate.env.rollout").qualname == "BaseEnv.rollout"  # env = SandboxEnv()
    assert index.resolve("torch.distributed.init_process_group") is None  # not the project
    engine = os.path.join(PROJECT, "src", "rollouts", "serving", "engine.py")
    assert index.module_names(engine)[0] == "rollouts.serving.engine"  # namespace subpackage
    assert [os.path.basename(p) for p in index.importers(engine)] == ["server.py"]


def test_summary_facts():
    s = summarize(b"""
import asyncio
from .x import Y as Z

POOL = Z(2)

class A(Z):
    def __init__(self):
        self.ex = Z()

    async def run(self):
        try:
            await asyncio.sleep(1)
        except Exception:
            pass
        finally:
            self.ex.shutdown()
""")
    assert s["imports"] == {"asyncio": "asyncio", "Z": ".x.Y"}
    assert s["vars"] == {"POOL": "Z"}
    a = s["classes"]["A"]
    assert a["bases"] == ["Z"] and a["attrs"] == {"ex": "Z"}
    run = a["methods"]["run"]
    assert run["async"] and run["finally"] == [17] and run["broad"] == [14]
    assert ["self.ex.shutdown", 17, 1] in run["calls"]
    assert summarize(b"def f(:\n") is None


def test_importers_from_import_statements_whatever_their_shape(tmp_path):
    """Importers are found from import statements alone: a parenthesised name list over
    several lines, ``import a.b.c``, a relative import; a mention outside an import is not."""
    pkg = tmp_path / "app" / "dist"
    pkg.mkdir(parents=True)
    (tmp_path / "app" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "groups.py").write_text("import torch.distributed as dist\n")
    (pkg / "multi.py").write_text("from app.dist import (\n    other,\n    groups,\n)\n")
    (pkg / "dotted.py").write_text("def f():\n    import app.dist.groups\n")
    (pkg / "relative.py").write_text("from .groups import thing\n")
    (pkg / "mention.py").write_text("groups = 1  # app.dist groups\n")
    index = ProjectIndex([str(tmp_path / "app")])
    found = {os.path.basename(p) for p in index.importers(str(pkg / "groups.py"), depth=1)}
    assert found == {"multi.py", "dotted.py", "relative.py"}


def test_a_long_file_list_makes_package_roots_not_one_root_per_folder(tmp_path):
    """pre-commit passes files one by one: a file inside a package adds its package's root,
    not its own folder (a root per folder made every lookup scan them all)."""
    files = []
    for i in range(30):
        d = tmp_path / "proj" / "pkg" / f"sub{i}"
        d.mkdir(parents=True)
        (d / "__init__.py").write_text("")
        (d / "mod.py").write_text("")
        files.append(str(d / "mod.py"))
    (tmp_path / "proj" / "pkg" / "__init__.py").write_text("")
    index = ProjectIndex(files)
    assert [r.dir for r in index.roots] == [str(tmp_path / "proj")]
    assert index.module_names(files[3]) == ["pkg.sub3.mod"]


def test_import_statements_match_the_regex_findall():
    """``import_statements`` is a faster ``_IMPORT_STATEMENT.findall``: the same statements."""
    from hypothesis import given, settings, strategies as st

    from shutdown_lint.index.project import _IMPORT_STATEMENT, import_statements

    samples = [
        b"import os\nfrom . import (a,\n  b)\nx = 'from'\n  import sys  # c\nfrom x \\\n import y\n",
        b"\r\nimport a\r\nfrom b import c\r\n",
        b"s = '''\nfrom q import r\n'''\ndef f():\n\tfrom z import (w)\n",
        b"importer = 1\nfromage = 2\nfrom\timport_x import y\n",
        b"",
    ]
    for src in samples:
        assert import_statements(src) == _IMPORT_STATEMENT.findall(src), src
    from pathlib import Path

    for path in sorted(Path(REPO, "shutdown_lint").rglob("*.py")):
        data = path.read_bytes()
        assert import_statements(data) == _IMPORT_STATEMENT.findall(data), path

    parts = st.sampled_from([b"import ", b"from ", b"(", b")", b"\n", b" ", b"\t", b"x", b".", b",", b"#", b"\\"])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(parts, max_size=40))
    def check(chunks):
        src = b"".join(chunks)
        assert import_statements(src) == _IMPORT_STATEMENT.findall(src)

    check()


def test_summary_walker_shortcuts_change_no_summary(monkeypatch):
    """The summary walker skips leaves and caches method names; with ``ast.NodeVisitor``'s
    own ``visit``/``generic_visit`` every summary comes out the same."""
    import ast as _ast
    from pathlib import Path

    from shutdown_lint.index import summary

    sources = [p.read_bytes() for p in sorted(Path(REPO).glob("*/**/*.py")) if "data" not in p.parts][:400]
    fast = [summary.summarize(s) for s in sources]
    monkeypatch.setattr(summary._FunctionWalker, "visit", _ast.NodeVisitor.visit)
    monkeypatch.setattr(summary._FunctionWalker, "generic_visit", _ast.NodeVisitor.generic_visit)
    assert [summary.summarize(s) for s in sources] == fast
    assert sum(1 for s in fast if s and s["functions"]) > 50


def _reference_direct_importers(index: ProjectIndex, path: str) -> list[str]:
    """Importers by the plain definition the fast search must match: a file with an import
    statement spelling the module's last word (with its parent, or relative, or the module
    is top-level), and whose whole import block, parsed at once, imports the module or a
    module under it (every dotted prefix of every absolute name)."""
    import re

    from shutdown_lint.index.project import _RELATIVE, _names_imported

    names = index.module_names(path)
    words = {n.rsplit(".", 1)[-1] for n in names}
    pattern = re.compile(rb"\b(" + b"|".join(re.escape(w.encode()) for w in words) + rb")\b")
    parents = [n.rsplit(".", 1)[0].encode() for n in names if "." in n]
    top_level = any("." not in n for n in names)
    out = []
    for f in index.project_files():
        stmts = index.import_lines(f)
        if f == path or not any(pattern.search(s) and (top_level or _RELATIVE.match(s) or any(p in s for p in parents))
                                for s in stmts):
            continue
        own = index.module_names(f)
        prefixes = set()
        for written in _names_imported(stmts):
            parts = index.absolute(written, own[0] if own else "", f.endswith("__init__.py")).split(".")
            prefixes.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
        if not prefixes.isdisjoint(names):
            out.append(f)
    return out


def test_importers_match_the_whole_import_block_definition(tmp_path):
    """The search parses only the statements that spell the module's word and the relative
    ones (cached per statement text); it finds what parsing each file's whole import block
    finds, including a file that imports a package only as the parent of a relative import
    (``from ..x import y`` imports ``pkg``) and one whose word is in an unrelated import."""
    files = {
        "pkg/__init__.py": "from .core import run\n",
        "pkg/core.py": "import os\n",
        "pkg/util.py": "from .core import run as go, other\n",
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": "from ..util import x\nfrom other.pkg import y\n",  # imports pkg via '..'
        "pkg/sub/star.py": "from pkg.core import *\n",
        "pkg/sub/alias.py": "import pkg.core as c, json\n",
        "pkg/sub/paren.py": "from pkg import (\n    util,\n    core,\n)\n",
        "pkg/sub/mention.py": "core = 1  # pkg core\nfrom elsewhere.core import z\n",
        "pkg/sub/odd.py": "from pkg import core; import os\nimport pkg.\\\n    util\n",
        "app.py": "import pkg\nfrom pkg.sub import deep\n",
        "tool.py": "from pkg.sub.deep import x\n",
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    index = ProjectIndex([str(tmp_path)])
    for rel in files:
        target = str(tmp_path / rel)
        fast = index._direct_importers(target, None)
        assert fast == _reference_direct_importers(ProjectIndex([str(tmp_path)]), target), rel
    pkg_importers = {os.path.relpath(p, tmp_path) for p in index._direct_importers(str(tmp_path / "pkg/__init__.py"), None)}
    assert {"app.py", "pkg/sub/star.py", "pkg/sub/alias.py", "pkg/sub/paren.py", "tool.py"} <= pkg_importers
    core = {os.path.relpath(p, tmp_path) for p in index._direct_importers(str(tmp_path / "pkg/core.py"), None)}
    assert core == {"pkg/__init__.py", "pkg/util.py", "pkg/sub/star.py", "pkg/sub/alias.py", "pkg/sub/paren.py",
                    "pkg/sub/odd.py"}


def test_importers_on_the_installed_packages_match_the_definition():
    """The same comparison over real packages: every module of ``libcst`` and of this project."""
    import libcst

    for root in (os.path.dirname(os.path.dirname(libcst.__file__)), REPO):
        top = [os.path.join(os.path.dirname(libcst.__file__), "_nodes")] if "site-packages" in root else \
            [os.path.join(REPO, "shutdown_lint")]
        index = ProjectIndex(top)
        reference = ProjectIndex(top)
        targets = index.project_files()
        assert len(targets) > 10
        for target in targets:
            assert index._direct_importers(target, None) == _reference_direct_importers(reference, target), target
