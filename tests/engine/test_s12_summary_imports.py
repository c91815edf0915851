"""Summarising a module (``index.summary.summarize``) needs neither the engines nor libcst: the
warm path re-summarises a changed dependency (``store.stale``) before it knows whether any file
must be linted again, and importing the engine would cost that path ~0.25 s (libcst alone ~0.15)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_summarize_imports_no_engine_and_no_libcst():
    code = ("import sys\n"
            "from shutdown_lint.index.summary import summarize\n"
            f"s = summarize(open({str(ROOT / 'shutdown_lint' / 'runner.py')!r}, 'rb').read())\n"
            "assert s['functions'], s\n"
            "print(sorted(m for m in sys.modules if m == 'libcst' or m.startswith('shutdown_lint.ast_engine')\n"
            "             or m.startswith('shutdown_lint.facts') or m.startswith('shutdown_lint.rules')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
