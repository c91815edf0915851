"""SHD401 early-signal-ignore, for real: SIGINT sent during setup after an early SIG_IGN.

The hazard program ignores SIGINT, then runs a long "model load" before
``asyncio.run``. A real SIGINT sent while it loads does nothing: the process is still
alive 2 s later and has to be killed. The program produced by ``fix_source`` (the
SIG_IGN moved just before ``asyncio.run``) dies of KeyboardInterrupt during the load.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

REPO = Path(__file__).resolve().parents[2]
# The fixed programs import runtime_guard from the repo. ``python prog.py`` puts the
# program's folder, not the cwd, on sys.path, and outside the repo the editable install
# resolves ``runtime_guard`` to an empty namespace package: put the repo first.
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD401",), target_version="py311")

HAZARD = textwrap.dedent(
    '''
    import asyncio
    import signal
    import time


    async def serve():
        await asyncio.sleep(0.1)
        print("SERVED", flush=True)


    def load_model():
        # stands for minutes of weight loading / ray.init / warm-up
        print("SETUP STARTED", flush=True)
        for _ in range(300):
            time.sleep(0.1)
        print("SETUP DONE", flush=True)


    def main():
        # the serving loop must not be interrupted half-way
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        load_model()
        asyncio.run(serve())


    if __name__ == "__main__":
        main()
    '''
).lstrip()


def _codes(source: str) -> list[str]:
    result = lint_source(source.encode(), "prog.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _start(path: Path) -> PipedChild:
    return PipedChild([sys.executable, path], cwd=str(REPO), env=ENV)


def _interrupt_during_setup(path: Path, wait: float) -> tuple[bool, int, str]:
    """Start ``path``, wait until its setup runs, send one real SIGINT. Returns
    (still alive ``wait`` s after the signal, exit status, stderr)."""
    with _start(path) as proc:
        line = proc.readline()  # blocks until the program reports its setup
        assert line.strip() == "SETUP STARTED", line
        os.kill(proc.pid, signal.SIGINT)
        alive, status, _, err = proc.finish_or_kill(wait)
        return alive, status, err


@pytest.mark.timeout(90)
def test_early_sig_ign_hides_ctrl_c_and_the_fix_restores_it(tmp_path):
    assert _codes(HAZARD) == ["SHD401"]
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)

    alive, status, _ = _interrupt_during_setup(hazard, wait=2)
    assert alive, "the hazard program should ignore SIGINT during setup"
    assert status == -signal.SIGKILL  # it had to be killed

    fixed_src = fix_source(HAZARD.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    assert _codes(fixed_src) == []
    # the SIG_IGN (and its comment) now sits right before asyncio.run
    assert (
        "    load_model()\n"
        "    # the serving loop must not be interrupted half-way\n"
        "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
        "    asyncio.run(serve())\n"
    ) in fixed_src
    # unsafe (docs/fix-safety.md): a process started in between would no longer inherit the
    # ignore (test_a_child_started_in_between_now_dies_on_sigterm); safe fixes leave it alone
    assert fix_source(HAZARD.encode(), "prog.py", SETTINGS, unsafe=False).source.decode() == HAZARD
    fixed = tmp_path / "fixed.py"
    fixed.write_text(fixed_src)

    # a liveness bound (it ends in well under a second), still far below the setup's 30 s
    alive, status, err = _interrupt_during_setup(fixed, wait=15)
    assert not alive, "the fixed program should stop on SIGINT during setup"
    assert status != 0
    assert "KeyboardInterrupt" in err
    assert "SETUP DONE" not in err


@pytest.mark.timeout(60)
def test_fixed_program_still_protects_the_serving_call(tmp_path):
    """Without a signal, the fixed program still completes: the move keeps the intent
    (SIGINT ignored while ``asyncio.run`` runs) and only shortens the window."""
    src = HAZARD.replace("range(300)", "range(3)")
    fixed_src = fix_source(src.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    fixed = tmp_path / "fixed_short.py"
    fixed.write_text(fixed_src)
    done = subprocess.run([sys.executable, str(fixed)], cwd=str(REPO), env=ENV, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["SETUP", "STARTED", "SETUP", "DONE", "SERVED"]


CHILD_IN_WINDOW = textwrap.dedent(
    '''
    import asyncio
    import signal
    import subprocess
    import sys


    async def serve():
        await asyncio.sleep(0.1)
        print("SERVED", flush=True)


    def start_helper():
        # stands for a helper that starts a process the rule cannot see into
        return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])


    def main():
        # the serving loop must not be stopped half-way
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        helper = start_helper()
        print(helper.pid, flush=True)
        print("HELPER EXIT", helper.wait(), flush=True)
        asyncio.run(serve())


    if __name__ == "__main__":
        main()
    '''
).lstrip()


def _helper_fate(path: Path, wait: float) -> str:
    """Start ``path``, SIGTERM the process its setup started (not the program itself), and
    report what became of that child within ``wait`` s (the child sleeps 30 s)."""
    with _start(path) as proc:
        child = int(proc.readline())
        os.kill(child, signal.SIGTERM)
        try:
            _, out, _ = proc.finish(wait)
        except subprocess.TimeoutExpired:
            os.kill(child, signal.SIGKILL)
            proc.finish(10)
            return "survived SIGTERM"
        return out.splitlines()[0]


@pytest.mark.timeout(60)
def test_a_child_started_in_between_now_dies_on_sigterm(tmp_path):
    """Why SHD401's fix is unsafe even when the rule sees no process start: the child of an
    opaque helper inherited the ignore before the fix and does not after it."""
    (found,) = lint_source(CHILD_IN_WINDOW.encode(), "prog.py", SETTINGS).diagnostics
    assert found.fix["applicability"] == "unsafe"
    hazard = tmp_path / "child_hazard.py"
    hazard.write_text(CHILD_IN_WINDOW)
    assert _helper_fate(hazard, wait=3) == "survived SIGTERM"
    fixed = tmp_path / "child_fixed.py"
    fixed.write_text(fix_source(CHILD_IN_WINDOW.encode(), "prog.py", SETTINGS, unsafe=True).source.decode())
    assert _helper_fate(fixed, wait=10) == "HELPER EXIT -15"  # a liveness bound: it ends at once
