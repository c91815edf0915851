"""The result cache is exact for the searches of a module's importers (SHD503's search for a
shutdown of an executor in the modules that import its module; process tails and class
hierarchies search them too): a warm run gives what ``--no-cache`` gives after an importer is
added, removed, renamed or edited, and after a file that did not import the module comes to.

Each scenario lints a real project with the real command line twice (a cold run that fills
the cache, then a warm run after the change) and compares the warm run with ``--no-cache``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import warm_after

pytestmark = pytest.mark.timeout(300)

POOL = ("from concurrent.futures import ThreadPoolExecutor\n\nPOOL = ThreadPoolExecutor(4)\n\n\n"
        "def submit(fn):\n    return POOL.submit(fn)\n")
SHUTS = "import a\n\n\ndef close():\n    a.POOL.shutdown(wait=True)\n"
USES = "import a\n\n\ndef close():\n    a.POOL.submit(print)\n"  # spells POOL, no shutdown
NO_WORD = "import a\n\n\ndef close():\n    pass\n"  # imports a, never spells POOL
UNRELATED = "import os\n\n\ndef close():\n    return os.getcwd()\n"


def _lint(root: Path, *extra: str) -> list[tuple]:
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--select", "SHD503", "--output-format", "json",
                           "--exit-zero", "--cache-dir", str(root / ".cache"), *extra, "."],
                          cwd=root, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return sorted((d["path"].rsplit(os.sep, 1)[-1], d["code"], d["line"], d["message"])
                  for d in json.loads(proc.stdout))


def _project(tmp_path: Path, **files: str) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.shutdown-lint]\n")
    for name, text in {"a": POOL, **files}.items():
        (root / f"{name}.py").write_text(text)
    return root


def _warm_equals_cold(root: Path, change) -> list[tuple]:  # type: ignore[no-untyped-def]
    _lint(root)  # fills the cache
    _lint(root)  # warm, nothing changed
    return warm_after(lambda *extra: _lint(root, *extra), change)


def _where(found: list[tuple]) -> list[tuple]:
    return [f[:3] for f in found]


FINDING = [("a.py", "SHD503", 3)]


def test_an_importer_added_that_shuts_the_pool_down(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _where(_lint(root)) == FINDING
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(SHUTS)) == []


def test_an_importer_removed_brings_the_finding_back(tmp_path: Path) -> None:
    root = _project(tmp_path, b=SHUTS)
    assert _lint(root) == []
    assert _where(_warm_equals_cold(root, lambda: (root / "b.py").unlink())) == FINDING


def test_an_importer_renamed_out_of_the_project_brings_the_finding_back(tmp_path: Path) -> None:
    root = _project(tmp_path, b=SHUTS)
    assert _where(_warm_equals_cold(root, lambda: (root / "b.py").rename(root / "b.py.orig"))) == FINDING


def test_an_importer_edited_to_no_longer_shut_it_down(tmp_path: Path) -> None:
    root = _project(tmp_path, b=SHUTS)
    assert _where(_warm_equals_cold(root, lambda: (root / "b.py").write_text(USES))) == FINDING


def test_an_importer_that_loses_the_word(tmp_path: Path) -> None:
    root = _project(tmp_path, b=SHUTS)
    assert _where(_warm_equals_cold(root, lambda: (root / "b.py").write_text(NO_WORD))) == FINDING


def test_an_importer_skipped_by_its_text_that_gains_the_word(tmp_path: Path) -> None:
    root = _project(tmp_path, b=NO_WORD)
    assert _where(_lint(root)) == FINDING  # b imports a but never spells POOL: not read
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(SHUTS)) == []


def test_a_second_hop_importer_skipped_by_its_text_that_gains_the_word(tmp_path: Path) -> None:
    """``c`` imports ``b``, which imports ``a``: neither ``c`` nor what it imports spells POOL, so
    the search does not read ``c`` (its text decided); ``c`` then comes to shut the pool down."""
    root = _project(tmp_path, b="import a\n\n\ndef helper():\n    return a\n",
                    c="import b\n\n\ndef close():\n    return b\n")
    assert _where(_lint(root)) == FINDING
    shuts = "import b\n\n\ndef close():\n    b.a.POOL.shutdown(wait=True)\n"
    assert _warm_equals_cold(root, lambda: (root / "c.py").write_text(shuts)) == []


def test_a_module_that_did_not_import_it_comes_to(tmp_path: Path) -> None:
    root = _project(tmp_path, c=UNRELATED)
    assert _where(_lint(root)) == FINDING
    assert _warm_equals_cold(root, lambda: (root / "c.py").write_text(SHUTS)) == []


def test_an_importer_in_a_package_of_another_folder(tmp_path: Path) -> None:
    """Two hops through a package: ``app/run.py`` imports ``lib.pool`` via ``lib/__init__``."""
    root = tmp_path / "proj"
    (root / "lib").mkdir(parents=True)
    (root / "app").mkdir()
    (root / "pyproject.toml").write_text("[tool.shutdown-lint]\n")
    (root / "lib" / "__init__.py").write_text("")
    (root / "lib" / "pool.py").write_text(POOL)
    (root / "app" / "__init__.py").write_text("")
    shuts = "from lib import pool\n\n\ndef close():\n    pool.POOL.shutdown(wait=True)\n"
    assert _where(_lint(root)) == [("pool.py", "SHD503", 3)]
    assert _warm_equals_cold(root, lambda: (root / "app" / "run.py").write_text(shuts)) == []


def test_nothing_changed_serves_the_cache(tmp_path: Path) -> None:
    """The dependency does not re-lint when nothing changed: the warm run reads no result anew
    (the index file is not rewritten)."""
    root = _project(tmp_path, c=UNRELATED)
    _lint(root)
    index = sorted((root / ".cache").glob("results-*.bin"))
    assert len(index) == 1
    before = index[0].stat().st_mtime_ns
    assert _where(_lint(root)) == FINDING
    assert index[0].stat().st_mtime_ns == before
