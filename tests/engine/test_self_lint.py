"""Our own code passes our own linter: `shutdown-lint` at the repository root, with the repository's
own configuration (which leaves out the example project and the programs the tests run, as they hold
hazards on purpose), exits 0. `.ci/run` runs the same command after the suite."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pytestmark = pytest.mark.timeout(300)


def test_the_repository_passes_its_own_linter():
    run = subprocess.run([sys.executable, "-m", "shutdown_lint", "--no-cache", "--output-format", "concise", "."],
                         cwd=REPO, capture_output=True, text=True, timeout=280)
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_ci_script_runs_it():
    with open(os.path.join(REPO, ".ci", "run")) as fh:
        assert "\nshutdown-lint --no-cache .\n" in fh.read()
