"""SHD402 for real: SIGTERM to a plain process running asyncio.run.

Hazard: the process dies on the spot; every task's `finally` is skipped, all lease
markers leak. Fixed (the exact autofix output): SIGTERM cancels the tasks like Ctrl+C,
0 markers leak, the exit status reports the interrupt.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD402",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the fixed program imports runtime_guard from this checkout
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
N = 5

HAZARD = textwrap.dedent('''
    import asyncio
    import os
    import sys

    LEASE_DIR = sys.argv[1]

    async def hold_sandbox(i):
        path = os.path.join(LEASE_DIR, f"sandbox-{i}.lease")
        open(path, "w").close()
        try:
            await asyncio.sleep(3600)  # a long trajectory
        finally:
            os.remove(path)  # release the sandbox

    async def main():
        tasks = [asyncio.create_task(hold_sandbox(i)) for i in range(%d)]
        await asyncio.sleep(0.2)
        print("ready", flush=True)
        await asyncio.gather(*tasks)

    if __name__ == "__main__":
        asyncio.run(main())
''' % N)


def _terminate(path, lease_dir) -> tuple[int, list[str], str]:
    proc = subprocess.Popen([sys.executable, str(path), str(lease_dir)], cwd=REPO, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    return proc.returncode, sorted(os.listdir(lease_dir)), err


@pytest.mark.timeout(90)
def test_sigterm_cleanup_before_and_after_fix(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD402"]

    leases = tmp_path / "before"
    leases.mkdir()
    rc, left, _ = _terminate(hazard, leases)
    assert rc == -signal.SIGTERM  # killed by the signal, no Python code ran
    assert len(left) == N  # every sandbox leaked

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    leases = tmp_path / "after"
    leases.mkdir()
    rc, left, err = _terminate(fixed, leases)
    assert left == []  # every finally ran
    assert "KeyboardInterrupt" in err
    assert rc in (-signal.SIGINT, 130)  # the interrupt is visible in the exit status


FORKS_A_CHILD = textwrap.dedent('''
    import asyncio
    import multiprocessing
    import sys
    import time


    def work():
        time.sleep(30)


    async def main():
        child = multiprocessing.get_context("fork").Process(target=work)
        child.start()
        await asyncio.sleep(0.5)
        if sys.argv[1:] == ["terminate"]:
            child.terminate()
        else:
            child.kill()
        child.join(10)
        print("child exit", child.exitcode, flush=True)
        return 7


    if __name__ == "__main__":
        result = asyncio.run(main())
        print("main returned", result, flush=True)
''')


@pytest.mark.timeout(90)
def test_fix_is_unsafe_a_forked_child_meets_another_fate_under_sigterm(tmp_path):
    """docs/fix-safety.md: the parent's normal path is unchanged (no SIGTERM to it), but a
    child forked after the fix inherits the KeyboardInterrupt handler."""
    (found,) = lint_source(FORKS_A_CHILD.encode(), "forks.py", SETTINGS).diagnostics
    assert found.fix["applicability"] == "unsafe"
    assert fix_source(FORKS_A_CHILD.encode(), "forks.py", SETTINGS).source == FORKS_A_CHILD.encode()
    fixed_src = fix_source(FORKS_A_CHILD.encode(), "forks.py", SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()\n    result = asyncio.run" in fixed_src
    runs = {}
    for name, text in (("original", FORKS_A_CHILD.encode()), ("fixed", fixed_src)):
        path = tmp_path / f"{name}.py"
        path.write_bytes(text)
        for how in ("kill", "terminate"):
            done = subprocess.run([sys.executable, str(path), how], cwd=REPO, env=ENV, capture_output=True,
                                  text=True, timeout=60)
            runs[name, how] = (done.returncode, done.stdout, "KeyboardInterrupt" in done.stderr)
    # the same values, output and status where the fix's handler plays no part
    assert runs["original", "kill"] == runs["fixed", "kill"] == (0, "child exit -9\nmain returned 7\n", False)
    # the child's fate under SIGTERM: killed by the signal before, a KeyboardInterrupt after
    assert runs["original", "terminate"] == (0, "child exit -15\nmain returned 7\n", False)
    assert runs["fixed", "terminate"] == (0, "child exit 1\nmain returned 7\n", True)
