"""SHD104's every-path semantics on ``tests/data/projects/cancel_paths``: each line marked
``# expect: SHD104`` carries a finding and no other line does. The marked shapes: a raise on
some branches only, only inside a loop that may not run, in some ``match`` cases; a
different exception raised; ``continue`` before the raise; ``yield`` in the handler; a
nested handler raising its own exception. The near misses (``near_misses.py``): a raise on
every branch / case, in a loop over a literal, after ``while True``, in a loop's ``else``; a
new ``CancelledError``; the cancellation saved and raised later; anyio's cancelled class
caught first; an exit; and a bare ``except:`` after ``except BaseException:`` (never runs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "tests" / "data" / "projects" / "cancel_paths"


def _lint(*extra: str) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD104",
         "--output-format", "json", "--exit-zero", *extra, str(PROJECT)],
        capture_output=True, text=True, timeout=120, cwd=str(REPO), env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _expected() -> set[tuple[str, int]]:
    out = set()
    for path in sorted(PROJECT.rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), start=1):
            if line.rstrip().endswith("# expect: SHD104"):
                out.add((path.relative_to(PROJECT).as_posix(), n))
    return out


def _found(findings: list[dict]) -> set[tuple[str, int]]:
    return {(Path(d["path"]).resolve().relative_to(PROJECT).as_posix(), d["line"]) for d in findings}


def test_marked_lines_are_exactly_the_findings():
    findings = _lint()
    assert all(d["code"] == "SHD104" for d in findings), findings
    expected = _expected()
    assert len(expected) == 10
    assert _found(findings) == expected


def test_same_findings_with_two_jobs():
    assert _found(_lint("--jobs", "2")) == _expected()


def test_messages_name_what_the_handler_catches():
    by_line = {(Path(d["path"]).name, d["line"]): d["message"] for d in _lint()}
    assert "`except (asyncio.CancelledError, KeyboardInterrupt)`" in by_line[("workers.py", 55)]
    assert "BaseException" not in by_line[("workers.py", 55)]
    assert "on some paths" in by_line[("workers.py", 9)]
    assert "a different exception" in by_line[("workers.py", 39)]
    assert "`continue` leaves the `except BaseException` handler (line 46)" in by_line[("workers.py", 48)]
    assert "`yield`" in by_line[("streams.py", 9)]
    # the bare `except:` after `except BaseException:` never runs: not reported
    assert ("workers.py", 64) not in by_line
