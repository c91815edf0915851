"""SHD503's second shape for real: an executor used as a ``with`` block while work is queued in
bulk, and no interrupt path that cancels it.

Hazard: Ctrl+C raises KeyboardInterrupt in the main thread at once, but leaving the block calls
``shutdown(wait=True)``, which runs every queued job first: the program ends only after all of
them (8 one-second jobs on one thread here; 16 on two processes). Fixed (the exact autofix
output: the block's body in ``try: ... except KeyboardInterrupt: ex.shutdown(wait=False,
cancel_futures=True); raise``, ``runtime_guard.shutdown_executor(ex)`` for the process pool): the
queued jobs are cancelled and the program ends after the running ones (the process pool's workers
are stopped). A normal run (no interrupt) prints the same results before and after the fix.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

SETTINGS = Settings(selected=("SHD503",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

PROGRAM = textwrap.dedent('''
    import sys
    import time
    from concurrent.futures import {factory}

    def score(i):
        time.sleep({job_s})  # a reward model call
        return i * i

    def main(n):
        with {factory}(max_workers={workers}) as ex:
            futures = [ex.submit(score, i) for i in range(n)]
            print("ready", flush=True)
            print(sum(f.result() for f in futures), flush=True)

    if __name__ == "__main__":
        main(int(sys.argv[1]))
''')

CASES = {
    "threads": dict(factory="ThreadPoolExecutor", workers=1, job_s=1.0, jobs=8),
    "processes": dict(factory="ProcessPoolExecutor", workers=2, job_s=1.0, jobs=16),
}


def _ctrl_c(path, jobs: int, wait: float) -> tuple[float, int]:
    """Ctrl+C (SIGINT to the program's process group) once the work is queued: (seconds from the
    signal to the program's end, exit status)."""
    # start_new_session: a child still running on the way out is killed as a group (SIGKILL)
    with PipedChild([sys.executable, path, jobs], cwd=REPO, env=ENV, start_new_session=True) as proc:
        proc.expect("ready")
        time.sleep(0.3)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        status, _, _ = proc.finish(wait)
        return time.monotonic() - sent, status


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", list(CASES))
def test_ctrl_c_waits_for_every_queued_job_until_the_fix_cancels_them(tmp_path, case):
    c = CASES[case]
    source = PROGRAM.format(**{k: c[k] for k in ("factory", "workers", "job_s")})
    diags = lint_source(source.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD503"] and "queues work in bulk" in diags[0].message
    assert diags[0].fix is not None and diags[0].fix["applicability"] == "safe"
    fixed_src = fix_source(source.encode(), "hazard.py", SETTINGS).source.decode()
    stop = "ex.shutdown(wait=False, cancel_futures=True)" if case == "threads" else "runtime_guard.shutdown_executor(ex)"
    assert f"except KeyboardInterrupt:\n            {stop}\n            raise" in fixed_src, fixed_src
    assert lint_source(fixed_src.encode(), "fixed.py", SETTINGS).diagnostics == []
    hazard, fixed = tmp_path / "hazard.py", tmp_path / "fixed.py"
    hazard.write_text(source)
    fixed.write_text(fixed_src)

    # the original and the fixed program run side by side (each is mostly its jobs' sleeps)
    with ThreadPoolExecutor(2) as pool:
        # the normal path: the same output
        outs = list(pool.map(lambda p: subprocess.run([sys.executable, str(p), "3"], capture_output=True, text=True,
                                                      timeout=60, env=ENV), (hazard, fixed)))
        assert outs[0].stdout == outs[1].stdout == "ready\n5\n" and outs[0].returncode == outs[1].returncode == 0

        # all queued work, in seconds of the pool's time
        drain = c["jobs"] * c["job_s"] / c["workers"]
        (before, rc_before), (after, rc_after) = pool.map(lambda p: _ctrl_c(p, c["jobs"], wait=drain + 30),
                                                          (hazard, fixed))
    print(f"{case}: Ctrl+C to exit {before:.1f} s before the fix, {after:.1f} s after (queued work {drain:.0f} s)")
    assert rc_before != 0 and rc_after != 0  # interrupted both times
    # liveness bounds: the original ran (nearly) all the queued work, the fixed one did not
    assert before > drain - 2 * c["job_s"] - 0.5, before
    assert after < drain / 2, after


def test_shutdown_lint_reports_its_own_old_runner_and_not_the_new_one():
    """Issue 31: the runner's pool was a ``with ProcessPoolExecutor`` block over a comprehension of
    ``submit`` (a copy is kept in tests/data/interrupt/); Ctrl+C waited for every queued batch."""
    old = os.path.join(REPO, "tests", "data", "interrupt", "runner_before_issue31.py")
    with open(old, "rb") as fh:
        found = lint_source(fh.read(), old, SETTINGS).diagnostics
    assert [(d.code, "queues work in bulk (`pool.submit` in a loop or comprehension)" in d.message)
            for d in found] == [("SHD503", True)]
    new = os.path.join(REPO, "shutdown_lint", "runner.py")
    with open(new, "rb") as fh:
        assert lint_source(fh.read(), new, SETTINGS).diagnostics == []
