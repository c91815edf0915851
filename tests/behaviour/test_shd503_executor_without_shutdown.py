"""SHD503 for real: Ctrl+C to a program whose ThreadPoolExecutor has queued work.

Hazard: the KeyboardInterrupt traceback prints at once but the process stays alive:
at exit `concurrent.futures` joins its worker, which first drains every queued job
(10 x 2 s here). Fixed (the exact autofix output: `runtime_guard.shutdown_executor` in
`close()`, which the interrupt path calls): the queued jobs are cancelled and the
process exits by itself after the running job.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

SETTINGS = Settings(selected=("SHD503",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

HAZARD = textwrap.dedent('''
    import time
    from concurrent.futures import ThreadPoolExecutor

    def score(i):
        time.sleep(2)  # a reward model call on the GPU
        return i

    class RewardBuffer:
        def __init__(self):
            self.executor = ThreadPoolExecutor(max_workers=1)

        def submit_all(self, n):
            return [self.executor.submit(score, i) for i in range(n)]

        def close(self):
            print("closing reward buffer", flush=True)

    def main():
        buffer = RewardBuffer()
        buffer.submit_all(10)
        try:
            print("ready", flush=True)
            while True:
                time.sleep(0.05)  # training loop
        except KeyboardInterrupt:
            buffer.close()
            raise

    if __name__ == "__main__":
        main()
''')


def _ctrl_c(path, wait: float):
    """SIGINT, then: (exit status or None if still alive after ``wait`` s, stderr)."""
    with PipedChild([sys.executable, path], cwd=REPO, env=ENV) as proc:
        proc.expect("ready")
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        try:
            status, _, err = proc.finish(wait)
            return status, err
        except subprocess.TimeoutExpired:
            return None, ""


@pytest.mark.timeout(90)
def test_ctrl_c_with_queued_executor_work(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    diags = lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD503"] and diags[0].fix

    rc, _ = _ctrl_c(hazard, wait=8)
    assert rc is None  # still alive 8 s after Ctrl+C: the executor drains its queue first

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"runtime_guard.shutdown_executor(self.executor)" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    rc, err = _ctrl_c(fixed, wait=8)
    assert rc is not None  # exited by itself once the running job finished
    assert rc in (-signal.SIGINT, 130)
    assert "KeyboardInterrupt" in err
