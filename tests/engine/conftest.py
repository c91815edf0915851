"""Helpers for the engine and command-line tests: a small project in tmp_path, the CLI
run in-process (capsys) or as a real subprocess, and test-only rules registered for one
test (a fix that cannot parse, a rule that kills its worker, a fix that needs py311)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import libcst as cst
import pytest

from shutdown_lint import registry
from shutdown_lint.cli import main
from shutdown_lint.rule import Fix, Invalid, Replace, Rule

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# SHD201 fires on this (a thread target calling sys.exit) and has a safe fix.
HAZARD = textwrap.dedent(
    """\
    import sys
    import threading


    def pump():
        # the exit below ends only this thread
        sys.exit(3)


    threading.Thread(target=pump).start()
    """
)
CLEAN = "import sys\n\n\ndef main():\n    sys.exit(0)\n"
PYPROJECT = '[project]\nname = "demo"\nrequires-python = ">=3.10"\n\n[tool.shutdown-lint]\nselect = ["SHD201"]\n'


def write(path, text, mode="w", **kw):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        with open(path, mode, newline="", **kw) as fh:
            fh.write(text)
    return path


def edit(path: str, old: str, new: str) -> None:
    """Replace ``old`` (which must be there) by ``new`` in the text file ``path``."""
    with open(path) as fh:
        text = fh.read()
    assert old in text
    with open(path, "w") as fh:
        fh.write(text.replace(old, new))


@pytest.fixture
def count_lints(monkeypatch):
    """The paths the analyzer lints during the test (cached files are not linted)."""
    import shutdown_lint.analyzer as analyzer

    calls = []
    real = analyzer.lint_source

    def counting(source, path, settings, **kw):
        calls.append(path)
        return real(source, path, settings, **kw)

    monkeypatch.setattr(analyzer, "lint_source", counting)
    return calls


@pytest.fixture
def project(tmp_path):
    write(tmp_path / "pyproject.toml", PYPROJECT)
    return tmp_path


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    """``cli(cwd, *args)`` runs ``main(args)`` in-process with ``cwd`` as working directory."""

    def run(cwd, *args) -> Run:
        monkeypatch.chdir(cwd)
        capsys.readouterr()
        code = main([str(a) for a in args])
        cap = capsys.readouterr()
        return Run(code, cap.out, cap.err)

    return run


def run_sub(cwd, *args, input=None, timeout=120, extra=()) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1")
    return subprocess.run([sys.executable, *extra, "-m", "shutdown_lint", *map(str, args)], cwd=cwd,
                          input=input, capture_output=True, timeout=timeout, env=env)


# ------------------------------------------------------------------ test-only rules


class BrokenFixRule(Rule):
    """A rule whose fix renders code that does not parse."""

    code = "SHD991"
    name = "test-broken-fix"
    summary = "test only"
    triggers = ("BREAKME",)
    invalid = [Invalid("BREAKME()\n", fixed="x\n")]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "BREAKME":
            # renders as `1.real`, which Python's tokenizer reads as `1.` followed by a name
            broken = cst.Attribute(value=cst.Integer("1"), attr=cst.Name("real"))
            self.report(node, "breaks", fix=Fix.safe(Replace(node, broken)))


class CrashRule(Rule):
    """A rule that kills the process analysing a file (as a segfaulting extension would)."""

    code = "SHD992"
    name = "test-crash"
    summary = "test only"
    triggers = ("CRASHME",)

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "CRASHME":
            os._exit(7)


class Needs311Rule(Rule):
    """A rule whose fix is only valid on Python 3.11+."""

    code = "SHD993"
    name = "test-needs-311"
    summary = "test only"
    triggers = ("OLDCALL",)
    fix_min_target = "py311"
    invalid = [Invalid("OLDCALL()\n", fixed="NEWCALL()\n")]

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "OLDCALL":
            self.report(node, "old call", fix=Fix.safe(Replace(node.func, cst.Name("NEWCALL"))))


@pytest.fixture
def extra_rules(monkeypatch):
    """Register the test-only rules for one test (forked workers inherit them)."""
    original = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, BrokenFixRule, CrashRule, Needs311Rule))
    return [BrokenFixRule, CrashRule, Needs311Rule]


def warm_after(lint, change):  # type: ignore[no-untyped-def]
    """``change()``, then a warm run (``lint()``, a real CLI run with the cache): it must equal a
    ``--no-cache`` run (``lint("--no-cache")``), and the run after it must give the same again.
    Returns the warm run's findings."""
    change()
    warm = lint()
    assert warm == lint("--no-cache")
    assert lint() == warm  # and the run after
    return warm
