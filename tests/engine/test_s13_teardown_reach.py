"""Issue 30 (session 13): what a teardown search (``teardown_elsewhere``: SHD503, SHD502,
SHD602) finds through an importer whose text never spells the search's words. Such an importer
is read because it imports a module that does (``_scanned``); a shutdown is then found only
through the callee of one of its teardown calls (``ProjectView.callee``), and that callee may
be reached in ways a gate on the importer's text could miss:

- a function of the module searched from itself (vLLM's ``structured_output``: the engine's
  ``shutdown()`` calls the manager's method that shuts the executor down);
- a function re-exported by a package ``__init__`` that does not spell the words;
- the same under another name (``from .impl import drain as stop_everything``);
- a submodule named only in the call (``pkg.impl.drain()`` after ``import pkg``);
- a method inherited from a class of another module (``self.drain()``);
- a dunder called by name (``Closer.__init__(x)``); a constructor call is not a callee.

Each case is a real project linted by the command line's ``main`` as it is, and with a gate
that is NOT exact (the controls): skipping importers that lack the words, counting only
callees defined in a module the importer imports itself, or only callees whose name the
importer spells. Every control is caught by at least one case: a cut of the summaries that
the searches load must keep these findings (and their absence) as they are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(300)

#: the module searched from: its executor is never shut down on a cleanup path here (SHD503 at
#: line 3); ``drain`` is no cleanup name and nothing here calls it
POOL = ("from concurrent.futures import ThreadPoolExecutor\n\nPOOL = ThreadPoolExecutor(4)\n\n\n"
        "def submit(fn):\n    return POOL.submit(fn)\n")
OWN = POOL + "\n\ndef drain():\n    POOL.shutdown(wait=True)\n"
#: a module that imports ``a`` and shuts the pool down in a function on no teardown path
IMPL = "import a\n\n\ndef drain():\n    a.POOL.shutdown(wait=True)\n"
FINDING = [("a.py", "SHD503", 3)]


def _finally(call: str, head: str) -> str:
    """``b.py``: imports ``a`` (so it is searched, and read: ``a`` spells POOL) and calls
    ``call`` in a ``finally``; never spells POOL itself."""
    return f"import a\n{head}\n\ndef main():\n    try:\n        work()\n    finally:\n        {call}\n"


#: case -> (files of the project, b.py last); each b.py lacks the word POOL
CASES: dict[str, dict[str, str]] = {
    "own module": {"a.py": OWN, "b.py": _finally("a.drain()", "")},
    "re-export": {"pkg/__init__.py": "from .impl import drain\n", "pkg/impl.py": IMPL,
                  "b.py": _finally("drain()", "from pkg import drain\n")},
    "alias": {"pkg/__init__.py": "from .impl import drain as stop_everything\n", "pkg/impl.py": IMPL,
              "b.py": _finally("pkg.stop_everything()", "import pkg\n")},
    "submodule": {"pkg/__init__.py": "", "pkg/impl.py": IMPL, "b.py": _finally("pkg.impl.drain()", "import pkg\n")},
    "inherited method": {"base.py": ("import a\n\n\nclass Base:\n    def drain(self):\n"
                                     "        a.POOL.shutdown(wait=True)\n"),
                         "b.py": ("import a\nfrom base import Base\n\n\nclass Owner(Base):\n"
                                  "    def __exit__(self, *exc):\n        self.drain()\n")},
    "dunder by name": {"base.py": ("import a\n\n\nclass Closer:\n    def __init__(self):\n"
                                   "        a.POOL.shutdown(wait=True)\n"),
                       "b.py": _finally("Closer.__init__(object.__new__(Closer))", "from base import Closer\n")},
    "constructor": {"base.py": ("import a\n\n\nclass Closer:\n    def __init__(self):\n"
                                "        a.POOL.shutdown(wait=True)\n"),
                    "b.py": _finally("Closer()", "from base import Closer\n")},
}

#: case -> variant -> the findings (``[]``: the shutdown is found through b.py)
EXPECTED: dict[str, dict[str, list]] = {
    "own module": {"as is": [], "skip wordless": FINDING, "imported only": [], "named only": []},
    "re-export": {"as is": [], "skip wordless": FINDING, "imported only": FINDING, "named only": []},
    "alias": {"as is": [], "skip wordless": FINDING, "imported only": FINDING, "named only": FINDING},
    "submodule": {"as is": [], "skip wordless": FINDING, "imported only": FINDING, "named only": []},
    "inherited method": {"as is": [], "skip wordless": FINDING, "imported only": [], "named only": []},
    "dunder by name": {"as is": [], "skip wordless": FINDING, "imported only": [], "named only": []},
    "constructor": {"as is": FINDING, "skip wordless": FINDING, "imported only": FINDING, "named only": FINDING},
}

#: lints each project (``sys.argv[2:]``) with the command line's ``main`` in this one process,
#: the index as it is or with an inexact gate (``sys.argv[1]``); prints ``{project: stdout}``
_RUN = """\
import contextlib, io, json, os, sys
import shutdown_lint.index.project as p
variant = sys.argv[1]
if variant == "skip wordless":
    def _scanned(view, importers, words):
        return (f for f in importers if not words or view.index.text_has(f, words))
    p._scanned = _scanned
elif variant in ("imported only", "named only"):
    callee = p.ProjectView.callee
    def _callee(self, fn, written, words=()):
        hit = callee(self, fn, written, words)
        if hit is None or hit.path == fn.path:
            return hit
        if variant == "imported only":
            return hit if hit.path in self.index.imported_files(fn.path) else None
        name = hit.name.rsplit(".", 1)[-1].encode()
        return hit if name in open(fn.path, "rb").read() else None
    p.ProjectView.callee = _callee
from shutdown_lint.cli import main
out = {}
for root in sys.argv[2:]:
    os.chdir(root)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = main(["--select", "SHD503", "--output-format", "json", "--exit-zero", "--no-cache", "."])
    assert code == 0, code
    out[root] = buf.getvalue()
sys.stdout.write(json.dumps(out))
"""


def _project(base: Path, files: dict[str, str]) -> Path:
    root = base
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.shutdown-lint]\n")
    (root / "a.py").write_text(POOL)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture(scope="module")
def findings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list]]:
    """``{case: {variant: findings}}``: one real subprocess per variant, every case in it."""
    base = tmp_path_factory.mktemp("teardown-reach")
    roots = {case: _project(base / f"case{i}", files) for i, (case, files) in enumerate(CASES.items())}
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    out: dict[str, dict[str, list]] = {case: {} for case in CASES}
    for variant in ("as is", "skip wordless", "imported only", "named only"):
        proc = subprocess.run([sys.executable, "-c", _RUN, variant, *map(str, roots.values())],
                              check=False, env=env, capture_output=True, timeout=240)
        assert proc.returncode == 0, proc.stderr.decode()
        texts = json.loads(proc.stdout)
        for case, root in roots.items():
            out[case][variant] = sorted((d["path"].rsplit(os.sep, 1)[-1], d["code"], d["line"])
                                        for d in json.loads(texts[str(root)]))
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_shutdown_found_through_a_wordless_importer(findings, case: str) -> None:
    assert findings[case]["as is"] == [tuple(f) for f in EXPECTED[case]["as is"]]


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_inexact_gate_changes_the_findings(findings, case: str) -> None:
    """The controls: what each inexact gate would give (it differs from the index as it is
    wherever the case reaches the shutdown in the way that gate does not see)."""
    assert findings[case] == {v: [tuple(f) for f in found] for v, found in EXPECTED[case].items()}


def test_every_inexact_gate_is_caught() -> None:
    for variant in ("skip wordless", "imported only", "named only"):
        assert any(EXPECTED[case][variant] != EXPECTED[case]["as is"] for case in CASES), variant
