"""What a pool worker sends back with a file's outcome (issue 30, the pool's extra CPU): the
module summaries it computed go to the parent only when the parent has a summary cache to save
them in. Under ``--no-cache`` the parent's store has no file: over ray+torch at -j2, 2.5 of the
3.8 MB of pickled outcomes were such summaries, pickled by the workers and unpickled by the
parent for nothing. Real command line, real forked workers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, write

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method")]

POOL = ("from concurrent.futures import ThreadPoolExecutor\n\nPOOL = ThreadPoolExecutor(4)\n\n\n"
        "def submit(fn):\n    return POOL.submit(fn)\n")
#: imports ``a`` and spells POOL in a function with a ``finally`` (a teardown path may start
#: there) without shutting it down: SHD503's search summarises it
USES = "import a\n\n\ndef close{i}():\n    try:\n        a.POOL.submit(print)\n    finally:\n        pass\n"

#: main() with runner.run wrapped: how many outcomes carried summaries, and how many summaries
PROGRAM = r"""
import sys
from shutdown_lint import runner
from shutdown_lint.cli import main

sent = []
run = runner.run
def counting(*args, **kwargs):
    outcomes = run(*args, **kwargs)
    sent.extend(len(o.summaries) for o in outcomes if o.summaries)
    return outcomes
runner.run = counting
rc = main(sys.argv[1:])
sys.stdout.flush()
print("SENT", sum(sent))
"""


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "a.py", POOL)
    for i in range(12):  # enough files for a pool (runner.SERIAL_THRESHOLD)
        write(root / f"b{i:02}.py", USES.format(i=i))
    return root


def _run(root: Path, *args: str) -> tuple[list, int]:
    env = {**os.environ, "PYTHONPATH": REPO}
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    done = subprocess.run([sys.executable, "-c", PROGRAM, "--select", "SHD503", "--exit-zero", "--output-format",
                           "json", "-j2", *args, "."], cwd=root, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out, _, sent = done.stdout.rpartition("SENT ")
    found = sorted((d["path"], d["line"], d["message"]) for d in json.loads(out))
    return found, int(sent)


def test_summaries_come_back_only_to_a_parent_that_saves_them(tmp_path):
    root = _project(tmp_path)
    cache = tmp_path / "cache"
    cached, sent_cached = _run(root, "--cache-dir", str(cache))
    # the workers summarised the importers of a.py and sent the summaries: they are in the cache
    assert sent_cached >= 12
    saved = [json.loads(p.read_text()) for p in cache.glob("index-v*.json")]
    assert saved and all(str(root / f"b{i:02}.py") in saved[0] for i in range(12))
    uncached, sent_uncached = _run(root, "--no-cache")
    assert sent_uncached == 0  # nothing to save them in: not sent
    assert uncached == cached and uncached  # the same findings either way (SHD503 on a.py)
    assert [f[0] for f in uncached] == ["a.py"]
