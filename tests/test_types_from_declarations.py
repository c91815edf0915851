"""Types from declarations (issue 28): the shared fact ``ModuleFacts.typer`` / ``type_of``, and
SHD301 on ``tests/data/projects/typed_params``, a package whose blocking calls are typed only
by declarations: parameters (every kind, ``Optional``, ``X | None``, same-type unions, string
annotations, ``typing.IO``/``TextIO``/``BinaryIO``), closures over them, annotated names bound
to anything (module globals too), ``self.x`` annotations, tuple unpacking, ``httpx2`` and the
urllib3 classes. Lines ending in ``# blocking`` are flagged through the real command line
(candidate tiers on), lines ending in ``# ok`` (in-memory files, mixed unions, ``*args``,
async clients, non-I/O methods, rebinding) are not."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint.facts import ModuleFacts
from shutdown_lint.facts.types import FILE

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "tests" / "data" / "projects" / "typed_params"
MARK = re.compile(r"# (blocking|ok)$")


def _marks(path: Path) -> dict[int, str]:
    return {i: m.group(1) for i, line in enumerate(path.read_text().splitlines(), 1)
            if (m := MARK.search(line.rstrip()))}


def _lint(cwd: Path, *args: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD301",
                           "--output-format", "json", "--exit-zero", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_project_blocking_lines_flagged_and_near_misses_not(tmp_path):
    dst = tmp_path / "typed_params"
    shutil.copytree(PROJECT, dst)
    found: dict[str, set[int]] = {}
    for d in _lint(dst, "src"):
        found.setdefault(Path(d["path"]).name, set()).add(d["line"])
    modules = sorted((dst / "src" / "ingest").glob("*.py"))
    assert len(modules) >= 3
    total = 0
    for path in modules:
        marks = _marks(path)
        blocking = {line for line, kind in marks.items() if kind == "blocking"}
        ok = {line for line, kind in marks.items() if kind == "ok"}
        total += len(blocking)
        assert found.get(path.name, set()) == blocking, (path.name, sorted(found.get(path.name, ())), sorted(blocking))
        assert not found.get(path.name, set()) & ok
    assert total >= 20


def test_each_module_alone_gives_the_same_lines(tmp_path):
    """The types come from the module's own declarations: one file linted alone agrees."""
    dst = tmp_path / "typed_params"
    shutil.copytree(PROJECT, dst)
    for path in sorted((dst / "src" / "ingest").glob("*.py")):
        lines = {d["line"] for d in _lint(dst, str(path.relative_to(dst)))}
        assert lines == {line for line, kind in _marks(path).items() if kind == "blocking"}, path.name


def _facts(source: str) -> ModuleFacts:
    return ModuleFacts.build(cst.parse_module(textwrap.dedent(source)))


def _type_of_last(facts: ModuleFacts, name: str):
    use = facts._names_by_value[name][-1]
    return facts.type_of(use, use)


@pytest.mark.parametrize("source,expected", [
    ("import io\ndef f(x: io.BufferedReader):\n    x\n", FILE),
    ("from io import TextIOWrapper\ndef f(x: TextIOWrapper | None = None):\n    x\n", FILE),
    ("from typing import Optional\nimport io\ndef f(*, x: Optional[io.FileIO]):\n    x\n", FILE),
    ("import typing\ndef f(x: 'typing.TextIO', /):\n    x\n", FILE),
    ("from typing import IO\ndef f(x: IO[str]):\n    x\n", FILE),
    ("import io, typing\ndef f(x: typing.Union[io.BufferedReader, io.BufferedWriter, None]):\n    x\n", FILE),
    ("import io\ndef f(x: io.TextIOWrapper):\n    def g():\n        x\n", FILE),
    ("import httpx\ndef f():\n    x: httpx.Client = make()\n    x\n", "httpx.Client"),
    ("import httpx\nx: 'httpx.Client' = make()\ndef f():\n    x\n", "httpx.Client"),
    ("from pathlib import Path\ndef f(a, b):\n    y, x = Path(a), Path(b)\n    x\n", "pathlib.Path"),
    ("import queue\nclass C:\n    def __init__(self):\n        self.q: 'queue.Queue[int]' = make()\n"
     "    def m(self):\n        x = self.q\n        x\n", "queue.Queue"),
    # declared once, rebound later: the declaration holds
    ("import io\ndef f():\n    x: io.TextIOWrapper = ...\n    x = make()\n    x\n", FILE),
    # near misses: mixed union, in-memory, Any, unannotated, *args, a later rebinding that is not a file
    ("import io\ndef f(x: io.TextIOWrapper | io.StringIO):\n    x\n", None),
    ("import io\ndef f(x: io.StringIO):\n    x\n", "io.StringIO"),
    ("from typing import Any\ndef f():\n    x: Any = open('p')\n    x\n", FILE),
    ("def f(x):\n    x\n", None),
    ("import io\ndef f(*x: io.TextIOWrapper):\n    x\n", None),
    ("import io\ndef f(x: io.TextIOWrapper):\n    x = 'p'\n    x\n", None),
    ("from pathlib import Path\ndef f(a):\n    x, *y = Path(a), 1\n    x\n", None),
])
def test_type_of(source, expected):
    assert _type_of_last(_facts(source), "x") == expected


def test_use_before_a_rebinding_sees_the_parameter():
    facts = _facts("import io\ndef f(x: io.TextIOWrapper):\n    x.read()\n    x = 'p'\n")
    first = facts._names_by_value["x"][1]  # 0 is the parameter's own name
    assert facts.type_of(first, first) == FILE


def test_one_resolver_per_view_and_module():
    facts = _facts("x = 1\n")
    assert facts.typer() is facts.typer()
    assert facts.typer(frozenset({"threading.Thread"})) is not facts.typer()


def test_bad_string_annotations_give_no_type_and_no_error():
    for ann in ("'not an expression ('", "'1 +'", "''", "'x' 'y'"):
        facts = _facts(f"def f(x: {ann}):\n    x\n")
        assert _type_of_last(facts, "x") is None


def test_a_comprehension_variable_hides_the_parameter_it_shadows():
    facts = _facts("import io\ndef f(x: io.TextIOWrapper, files):\n    return [x.read() for x in files]\n")
    use = facts._names_by_value["x"][1]  # x.read() in the element, before its ``for x``
    assert facts.type_of(use, use) is None


# ---------------------------------------------------------------- return annotations
RETURNS = REPO / "tests" / "data" / "projects" / "typed_returns"


def test_return_annotations_type_the_result_here_and_across_modules(tmp_path):
    """``c = open_client()`` of ``def open_client() -> httpx.Client``: in the same module and, through
    the project index, from another module (plain, ``Optional``, a file, ``await`` of an ``async
    def``, ``module.function()``); the near misses (no annotation, ``Any``, a mixed union, an
    async client, an ``async def`` not awaited, a sync caller, a rebinding) are not flagged."""
    dst = tmp_path / "typed_returns"
    shutil.copytree(RETURNS, dst)
    found: dict[str, set[int]] = {}
    for d in _lint(dst, "src"):
        found.setdefault(Path(d["path"]).name, set()).add(d["line"])
    for name in ("factories.py", "handlers.py"):
        marks = _marks(dst / "src" / "gateway" / name)
        blocking = {line for line, kind in marks.items() if kind == "blocking"}
        assert found.get(name, set()) == blocking, (name, sorted(found.get(name, ())), sorted(blocking))
    assert len(found["handlers.py"]) == 5


def test_changing_the_other_modules_annotation_relints_the_caller(tmp_path):
    """The callee's module is a dependency of the caller's cached result: with the cache on, an
    edit of the return annotation alone changes the caller's findings."""
    dst = tmp_path / "typed_returns"
    shutil.copytree(RETURNS, dst)
    cache = ["--cache-dir", str(tmp_path / "cache")]

    def handler_lines() -> set[int]:
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", *cache, "--select", "SHD301",
                               "--output-format", "json", "--exit-zero", "src"], cwd=dst, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        return {d["line"] for d in json.loads(proc.stdout) if Path(d["path"]).name == "handlers.py"}

    before = handler_lines()
    assert 12 in before
    factories = dst / "src" / "gateway" / "factories.py"
    factories.write_text(factories.read_text().replace("def open_client() -> httpx.Client:",
                                                       "def open_client() -> object:"))
    after = handler_lines()
    assert 12 not in after and 18 not in after
    assert after == before - {12, 18}


@pytest.mark.parametrize("source,expected", [
    ("import httpx\ndef make() -> httpx.Client: ...\nasync def f():\n    x = make()\n    x\n", "httpx.Client"),
    ("import httpx\nfrom typing import Optional\ndef make() -> 'Optional[httpx.Client]': ...\n"
     "def f():\n    x = make()\n    x\n", "httpx.Client"),
    ("import io\ndef make() -> io.TextIOWrapper | None: ...\ndef f():\n    x = make()\n    x\n", FILE),
    ("import httpx\nclass K:\n    def make(self) -> httpx.Client: ...\n    def f(self):\n        x = self.make()\n"
     "        x\n", "httpx.Client"),
    ("import httpx\nasync def make() -> httpx.Client: ...\nasync def f():\n    x = await make()\n    x\n",
     "httpx.Client"),
    # near misses: a coroutine function not awaited, no annotation, Any, a mixed union
    ("import httpx\nasync def make() -> httpx.Client: ...\nasync def f():\n    x = make()\n    x\n", None),
    ("import httpx\ndef make():\n    return httpx.Client()\ndef f():\n    x = make()\n    x\n", None),
    ("import httpx\nfrom typing import Any\ndef make() -> Any: ...\ndef f():\n    x = make()\n    x\n", None),
    ("import httpx\ndef make() -> httpx.Client | httpx.AsyncClient: ...\ndef f():\n    x = make()\n    x\n", None),
])
def test_type_of_a_call_by_its_return_annotation(source, expected):
    assert _type_of_last(_facts(source), "x") == expected
