"""Issue 30: a teardown search (``teardown_elsewhere``: SHD503, SHD502, SHD602) does not summarise
an importer whose text shows that nothing in it runs on a teardown path
(``ProjectIndex.no_teardown_path``): no ``except``/``finally`` clause that can be in a function,
no function with a cleanup name, no registration. Such an importer gives nothing, directly or
through the callees of its teardown calls, so the findings are the same without the cut.

Near misses: every spelling of a teardown path keeps the importer read (the shutdown is found
through it, with and without the cut, in real command-line runs); the importers the cut skips
change nothing. Cache: an importer the cut skipped that comes to have a teardown path re-lints
the module searched from (and the other way round).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from shutdown_lint.index.project import ProjectIndex
from shutdown_lint.rules._vocabulary import CLEANUP_WORDS, mentions

from .conftest import warm_after

pytestmark = pytest.mark.timeout(300)

#: the module searched from: its executor is never shut down here (SHD503 at line 3)
POOL = ("from concurrent.futures import ThreadPoolExecutor\n\nPOOL = ThreadPoolExecutor(4)\n\n\n"
        "def submit(fn):\n    return POOL.submit(fn)\n")
#: imports ``a``; shuts the pool down in a function that is on no teardown path here
HELPER = "import a\n\n\ndef drain():\n    a.POOL.shutdown(wait=True)\n"
FINDING = [("a.py", "SHD503", 3)]

#: ``b`` never spells POOL: it is read only because it imports ``helper``, which does; the
#: shutdown is found through ``helper.drain()`` when ``b`` calls it on a teardown path
KEPT = {
    "finally": "import helper\n\n\ndef main():\n    try:\n        work()\n    finally:\n        helper.drain()\n",
    "except": ("import helper\n\n\ndef main():\n    try:\n        work()\n    except KeyboardInterrupt:\n"
               "        helper.drain()\n        raise\n"),
    "except star": ("import helper\n\n\ndef main():\n    try:\n        work()\n    except* KeyboardInterrupt:\n"
                    "        helper.drain()\n        raise\n"),
    "tab indent": "import helper\n\n\ndef main():\n\ttry:\n\t\twork()\n\tfinally:\n\t\thelper.drain()\n",
    "crlf": "import helper\r\n\r\n\r\ndef main():\r\n    try:\r\n        work()\r\n    finally:\r\n        helper.drain()\r\n",
    "method finally": ("import helper\n\n\nclass Runner:\n    def run(self):\n        try:\n            work()\n"
                       "        finally:\n            helper.drain()\n"),
    "cleanup name": "import helper\n\n\ndef shutdown_all():\n    helper.drain()\n",
    "cleanup method": "import helper\n\n\nclass Owner:\n    def __exit__(self, *exc):\n        helper.drain()\n",
    "def backslash": "import helper\n\n\ndef \\\n        close():\n    helper.drain()\n",
    "async cleanup": "import helper\n\n\nasync def aclose():\n    helper.drain()\n",
    "atexit": "import atexit\n\nimport helper\n\n\ndef handler():\n    helper.drain()\n\n\natexit.register(handler)\n",
    "signal": ("import signal\n\nimport helper\n\n\ndef handler(signum, frame):\n    helper.drain()\n\n\n"
               "signal.signal(signal.SIGTERM, handler)\n"),
    "from import": "from helper import drain\n\n\ndef main():\n    try:\n        work()\n    finally:\n        drain()\n",
    "fullwidth name": "import helper\n\n\ndef \uff43\uff4c\uff4f\uff53\uff45():\n    helper.drain()\n",  # NFKC: close
}
#: ``b`` has no teardown path: the cut skips it, the finding stays
CUT = {
    "module try": ("try:\n    import helper\nexcept ImportError:\n    helper = None\nfinally:\n    pass\n\n\n"
                   "def main():\n    helper.drain()\n"),
    "no function": "import helper\n\nhelper.drain()\n",
    "crlf module try": "try:\r\n    import helper\r\nexcept ImportError:\r\n    pass\r\n\r\n\r\ndef run():\r\n    helper.drain()\r\n",
    "plain names": "import helper\n\n\ndef main():\n    helper.drain()\n\n\ndef worker_loop():\n    return main()\n",
}

_NO_CUT = ("import sys\nimport shutdown_lint.index.project as p\n"
           "p.ProjectIndex.no_teardown_path = lambda *a: False\n"
           "from shutdown_lint.cli import main\nsys.exit(main())\n")


def _lint(root: Path, *extra: str, cut: bool = True) -> list[tuple]:
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    head = [sys.executable, "-m", "shutdown_lint"] if cut else [sys.executable, "-c", _NO_CUT]
    proc = subprocess.run([*head, "--select", "SHD503", "--output-format", "json", "--exit-zero",
                           "--cache-dir", str(root / ".cache"), *extra, "."],
                          cwd=root, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return sorted((d["path"].rsplit(os.sep, 1)[-1], d["code"], d["line"]) for d in json.loads(proc.stdout))


def _project(tmp_path: Path, b: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.shutdown-lint]\n")
    (root / "a.py").write_text(POOL)
    (root / "helper.py").write_text(HELPER)
    (root / "b.py").write_bytes(b.encode())
    return root


def _cut_holds(root: Path) -> bool:
    here = os.getcwd()
    os.chdir(root)
    try:
        index = ProjectIndex(["."])
        return index.no_teardown_path(str(root / "b.py"), lambda name: mentions(name, CLEANUP_WORDS))
    finally:
        os.chdir(here)


#: lints each project given (``sys.argv[2:]``) with the command line's ``main``, one after the
#: other in this one process, with the cut or without it (``sys.argv[1]``); prints
#: ``{project: [exit code, stdout]}``. One interpreter start for all the near misses, not two each
_MANY = ("import contextlib, io, json, os, sys\n"
         "if sys.argv[1] == 'no-cut':\n"
         "    import shutdown_lint.index.project as p\n"
         "    p.ProjectIndex.no_teardown_path = lambda *a: False\n"
         "from shutdown_lint.cli import main\n"
         "out = {}\n"
         "for root in sys.argv[2:]:\n"
         "    os.chdir(root)\n"
         "    buf = io.StringIO()\n"
         "    with contextlib.redirect_stdout(buf):\n"
         "        code = main(['--select', 'SHD503', '--output-format', 'json', '--exit-zero',\n"
         "                     '--cache-dir', os.path.join(root, '.cache'), '--no-cache', '.'])\n"
         "    out[root] = [code, buf.getvalue()]\n"
         "sys.stdout.write(json.dumps(out))\n")


def _lint_many(roots: list[Path], cut: bool) -> dict[Path, list[tuple]]:
    """``_lint(root, "--no-cache", cut=cut)`` for every root, in one real subprocess."""
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-c", _MANY, "cut" if cut else "no-cut", *map(str, roots)],
                          env=env, capture_output=True, timeout=240)
    assert proc.returncode == 0, proc.stderr.decode()
    out = json.loads(proc.stdout)
    assert [code for code, _ in out.values()] == [0] * len(roots), proc.stderr.decode()
    return {Path(root): sorted((d["path"].rsplit(os.sep, 1)[-1], d["code"], d["line"]) for d in json.loads(text))
            for root, (_, text) in out.items()}


@pytest.fixture(scope="module")
def near_misses(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, list[tuple], list[tuple]]]:
    """Every KEPT and CUT case as its own project: ``{case: (root, without the cut, with it)}``."""
    base = tmp_path_factory.mktemp("near-misses")
    roots = {}
    for i, (case, text) in enumerate([*KEPT.items(), *CUT.items()]):
        (base / f"case{i}").mkdir()
        roots[case] = _project(base / f"case{i}", text)
    plain, cut = _lint_many(list(roots.values()), cut=False), _lint_many(list(roots.values()), cut=True)
    return {case: (root, plain[root], cut[root]) for case, root in roots.items()}


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_teardown_path_keeps_the_importer_read(near_misses, case: str) -> None:
    root, plain, cut = near_misses[case]
    assert not _cut_holds(root)
    assert plain == []  # the shutdown is found through b
    assert cut == []


@pytest.mark.parametrize("case", sorted(CUT))
def test_an_importer_without_a_teardown_path_is_not_read(near_misses, case: str) -> None:
    root, plain, cut = near_misses[case]
    assert _cut_holds(root)
    assert plain == FINDING
    assert cut == FINDING


def test_text_conditions() -> None:
    """The decision on the bytes alone (the names ``is_cleanup_name`` is asked about)."""
    from shutdown_lint.index.text_facts import _def_names, _indented_clause

    assert _indented_clause(b"def f():\n    try:\n        g()\n    except E:\n        pass\n")
    assert _indented_clause(b"x = 1\n\x0cfinally_ = 2\n") is False  # not the word
    assert _indented_clause(b"\x0cexcept E:\n")  # a form feed first: not column 0 as read here
    assert not _indented_clause(b"try:\n    import x\nexcept ImportError:\n    pass\nfinally:\n    pass\n")
    assert not _indented_clause(b"try:\r    import x\rexcept ImportError:\r    pass\r")
    assert sorted(_def_names(b"def a():\n  pass\nasync  def\tb():\n  pass\ndef \\\n  c(): pass\n")) == ["a", "b", "c"]
    assert _def_names(b"undef x\nredef_y = 1\n") == ()


def test_every_function_on_a_teardown_path(tmp_path: Path) -> None:
    """SHD602's search takes every function as a teardown path: a module with a ``def`` is read."""
    root = _project(tmp_path, CUT["plain names"])
    index = ProjectIndex([str(root)])
    assert not index.no_teardown_path(str(root / "b.py"), lambda name: True)
    (root / "c.py").write_text(CUT["no function"])
    assert index.no_teardown_path(str(root / "c.py"), lambda name: True)


def _warm_equals_cold(root: Path, change) -> list[tuple]:  # type: ignore[no-untyped-def]
    _lint(root)  # fills the cache
    _lint(root)  # warm, nothing changed
    return warm_after(lambda *extra: _lint(root, *extra), change)


def test_a_skipped_importer_that_gains_a_teardown_path(tmp_path: Path) -> None:
    root = _project(tmp_path, CUT["plain names"])
    assert _lint(root) == FINDING  # b was not read: no teardown path
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(KEPT["finally"])) == []


def test_a_skipped_importer_that_gains_a_cleanup_name(tmp_path: Path) -> None:
    root = _project(tmp_path, CUT["plain names"])
    assert _lint(root) == FINDING
    gains = CUT["plain names"].replace("worker_loop", "stop_workers").replace("def main", "def main")
    gains = gains.replace("def stop_workers():\n    return main()", "def stop_workers():\n    helper.drain()")
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(gains)) == []


def test_an_importer_that_loses_its_teardown_path(tmp_path: Path) -> None:
    root = _project(tmp_path, KEPT["atexit"])
    assert _lint(root) == []
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(CUT["no function"])) == FINDING
