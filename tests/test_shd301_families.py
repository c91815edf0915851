"""SHD301 per family on this repository's own fixtures (tests/data/blocking_families/).

Every line marked ``# blocking`` is flagged, no line marked ``# ok`` is (async clients,
``to_thread``/``run_in_executor``/``anyio``/``trio`` thread runners, ``anyio.Path``,
polls with ``block=False``/``timeout=0``, a sync helper run in a thread). Switching a
family off with ``blocking-families`` silences exactly that family, and a bad family name
is a one-line configuration error naming the key.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.rules._blocking_vocabulary import FAMILY_NAMES
from shutdown_lint.settings import Settings

DATA = Path(__file__).parent / "data" / "blocking_families"
FIXTURES = sorted(p.stem for p in DATA.glob("*.py"))


def _marked(path: Path, marker: str) -> set[int]:
    """Lines ending in ``# blocking`` / ``# blocking (callee)`` / ``# ok``."""
    pattern = re.compile(rf"# {marker}( \(callee\))?$")
    return {i for i, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line.rstrip())}


def _flagged(path: Path, families=None) -> set[int]:
    options = {"SHD301": {"blocking-families": families}} if families is not None else {}
    result = lint_source(path.read_bytes(), path.name, Settings(selected=("SHD301",), rule_options=options))
    assert result.error is None, result.error
    return {d.line for d in result.diagnostics}


def test_every_family_has_a_fixture():
    assert {"http", "processes", "files", "paths", "sleeps", "waits"} <= set(FIXTURES)
    assert set(FIXTURES) <= set(FAMILY_NAMES)


@pytest.mark.parametrize("family", FIXTURES)
def test_family_fixture_lines_caught_and_near_misses_not(family):
    path = DATA / f"{family}.py"
    blocking, ok = _marked(path, "blocking"), _marked(path, "ok")
    assert len(blocking) >= 5 and len(ok) >= 5
    flagged = _flagged(path)
    assert blocking - flagged == set(), f"missed lines {sorted(blocking - flagged)}"
    assert flagged & ok == set(), f"near misses flagged on lines {sorted(flagged & ok)}"
    assert flagged - blocking == set(), f"unmarked lines flagged {sorted(flagged - blocking)}"


@pytest.mark.parametrize("family", FIXTURES)
def test_switching_a_family_off_silences_it(family):
    path = DATA / f"{family}.py"
    others = [f for f in FAMILY_NAMES if f != family]
    left = _flagged(path, others)
    # what is left comes from other families the fixture also touches (e.g. a Popen's stdout is a file)
    assert len(left) < len(_marked(path, "blocking")) / 2
    assert _flagged(path, []) == set()


def test_unknown_family_is_a_one_line_config_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.shutdown-lint.rules.SHD301]\nblocking-families = ["http", "sockets"]\n'
    )
    (tmp_path / "a.py").write_text("async def f():\n    pass\n")
    done = subprocess.run([sys.executable, "-m", "shutdown_lint", "--no-cache", "a.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "blocking-families" in err and "'sockets'" in err and "pyproject.toml" in err
