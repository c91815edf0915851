"""The snapshot of the project's walk (``index.store._Snapshot``) keeps each ``__init__.py`` probe of
an artefact folder (``build/``: walked only when it is a package) once, though roots that overlap
(a package named on the command line: it and its parent) walk its folders twice. A warm run then
checks each probe's path once. An artefact folder made a package changes no folder stamp the
snapshot holds (its parent's entries are the same): only the probe tells.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shutdown_lint.cache import unpack
from shutdown_lint.index import store

from .conftest import warm_after
from .test_s5_inval_importers import POOL, SHUTS

pytestmark = pytest.mark.timeout(300)


def _lint(root: Path, *extra: str) -> list[tuple]:
    """SHD503 over the package ``pkg`` named on the command line (roots: ``pkg`` and its parent)."""
    env = dict(os.environ)
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--select", "SHD503", "--output-format", "json",
                           "--exit-zero", "--cache-dir", str(root.parent / "cache"), *extra, "pkg"],
                          cwd=root, env=env, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr.decode()
    return sorted((d["path"].rsplit(os.sep, 1)[-1], d["code"], d["line"]) for d in json.loads(proc.stdout))


def _project(tmp_path: Path) -> Path:
    """``pkg/a.py`` holds a pool nothing shuts down; ``pkg/build/closer.py`` would, but ``build/`` is
    an artefact folder (no ``__init__.py``): not one of the project's files."""
    root = tmp_path / "proj"
    (root / "pkg" / "build").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.shutdown-lint]\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "a.py").write_text(POOL)
    (root / "pkg" / "build" / "closer.py").write_text(SHUTS)
    time.sleep(store.RACY_NS / 1e9 + 0.2)  # every folder's stamp older than the snapshot's margin
    return root


def _probes(root: Path) -> list:
    (whole,) = [p for p in (root.parent / "cache").glob("project-*.bin") if not p.name.endswith(".dirs.bin")]
    return unpack(whole.read_bytes())[2][3]


def test_each_probe_is_kept_once(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _lint(root) == [("a.py", "SHD503", 3)]
    assert _lint(root) == [("a.py", "SHD503", 3)]
    probes = _probes(root)
    assert (str(root / "pkg" / "build" / "__init__.py"), False) in probes
    assert len(probes) == len(set(probes))


def test_an_artefact_folder_made_a_package_under_overlapping_roots(tmp_path: Path) -> None:
    root = _project(tmp_path)
    assert _lint(root) == [("a.py", "SHD503", 3)]  # cold
    assert _lint(root) == [("a.py", "SHD503", 3)]  # warm, nothing changed
    # closer.py is a project file now
    assert warm_after(lambda *extra: _lint(root, *extra),
                      lambda: (root / "pkg" / "build" / "__init__.py").write_text("")) == []
