"""SHD602 for real: a child process started with no stop on the exception and Ctrl+C paths.

The program starts a Python child that writes a heartbeat file every 50 ms, records the
child's pid, then (by mode) raises, waits for Ctrl+C, or waits for the child. Hazard: when
the parent raises, gets SIGINT alone (`kill -INT <parent>`), or gets the terminal's Ctrl+C
(SIGINT to its process group) while the child runs in its own session, the parent exits and
the child is still alive afterwards: its pid is a live process (not a zombie) and its
heartbeat file keeps changing. Fixed (the real fixer's output, a safe fix: the statements
after the start in a `try` whose `finally` calls `runtime_guard.terminate_process_groups`):
the child is gone when the parent has exited. Normal path: same stdout, stderr and exit
status before and after the fix. The unsafe label is measured too: when the region can
return before the wait, a run down that path leaves the child running before the fix and
ends it after (same output and status).
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

SETTINGS = Settings(selected=("SHD602",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

HAZARD = textwrap.dedent('''
    import subprocess
    import sys
    import time

    HEARTBEAT = """
    import sys, time
    end = time.monotonic() + float(sys.argv[2])
    while time.monotonic() < end:
        with open(sys.argv[1], "w") as f:
            f.write(str(time.monotonic()))
        time.sleep(0.05)
    """

    def main(mode, pidfile, beat):
        child = subprocess.Popen(
            [sys.executable, "-c", HEARTBEAT, beat, "0.3" if mode == "normal" else "60"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=(mode == "ctrl-c-group"),
        )
        with open(pidfile, "w") as f:
            f.write(str(child.pid))
        print("started", flush=True)
        if mode == "raise":
            raise RuntimeError("evaluation failed")
        if mode.startswith("ctrl-c"):
            while True:
                time.sleep(0.05)  # the work the parent does while the child runs
        rc = child.wait()
        print("child exited", rc, flush=True)

    if __name__ == "__main__":
        main(*sys.argv[1:])
''')


def _alive(pid: int) -> bool:
    """A live process (a zombie, dead but not yet reaped by init, does not count)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


def _beating(beat, within: float) -> bool:
    """The heartbeat file changes within ``within`` seconds (a loaded machine may delay the
    child's first beats)."""
    def read():
        try:
            return beat.read_text()
        except FileNotFoundError:
            return None
    first = read()
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = read()
        if now and now != first:
            return True
    return False


def _run(path, mode, tmp_path, tag):
    """Run the program in ``mode``; returns (status, stdout, stderr, child pid, child alive
    1 s after the parent exited, heartbeat file still changing after that)."""
    pidfile, beat = tmp_path / f"{tag}-{mode}.pid", tmp_path / f"{tag}-{mode}.beat"
    group = mode == "ctrl-c-group"
    pid = None
    try:
        with PipedChild([sys.executable, path, mode, pidfile, beat], cwd=REPO, env=ENV,
                        start_new_session=group) as proc:
            proc.expect("started")
            pid = int(pidfile.read_text())
            if mode.startswith("ctrl-c"):
                time.sleep(0.3)
                if group:
                    os.killpg(proc.pid, signal.SIGINT)  # the terminal's Ctrl+C: the whole foreground group
                else:
                    os.kill(proc.pid, signal.SIGINT)  # kill -INT <parent>, a scheduler, a supervisor
            status, out, err = proc.finish(30)  # liveness bound: 10 s grace + kill at most
            out = "started\n" + out
        time.sleep(1.0)
        alive = _alive(pid)
        return status, out, err, pid, alive, _beating(beat, 5.0 if alive else 1.0)
    finally:
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)  # what the hazard left behind


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shd602")
    hazard = tmp / "hazard.py"
    hazard.write_text(HAZARD)
    diags = lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD602"] and diags[0].fix is not None
    assert "stopped only on the normal path" in diags[0].message
    # a safe fix: --fix applies it without --unsafe-fixes
    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=False).source
    text = fixed_src.decode()
    assert "    try:\n        with open(pidfile" in text
    assert "        rc = child.wait()\n    finally:\n        runtime_guard.terminate_process_groups([child])\n" in text
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp / "fixed.py"
    fixed.write_bytes(fixed_src)
    return hazard, fixed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["raise", "ctrl-c-parent", "ctrl-c-group"])
def test_child_outlives_the_parent_and_not_after_the_fix(programs, mode, tmp_path):
    hazard, fixed = programs
    rc, _, err, pid, alive, beating = _run(hazard, mode, tmp_path, "hazard")
    assert rc != 0
    assert alive and beating, f"{mode}: the child {pid} should survive the parent"
    rc2, _, err2, pid2, alive2, beating2 = _run(fixed, mode, tmp_path, "fixed")
    assert rc2 == rc  # same exit: status 1 for the exception, -SIGINT for KeyboardInterrupt
    assert err.splitlines()[-1] == err2.splitlines()[-1]  # the same exception ends it
    assert not alive2 and not beating2, f"{mode}: the child {pid2} survived the fixed parent"


@pytest.mark.timeout(60)
def test_normal_path_unchanged(programs, tmp_path):
    hazard, fixed = programs
    rc, out, err, _, alive, _ = _run(hazard, "normal", tmp_path, "hazard")
    rc2, out2, err2, _, alive2, _ = _run(fixed, "normal", tmp_path, "fixed")
    assert (rc, out, err) == (0, "started\nchild exited 0\n", "")
    assert (rc2, out2, err2) == (rc, out, err)
    assert not alive and not alive2


@pytest.mark.timeout(60)
def test_the_helper_does_nothing_to_a_reaped_child(monkeypatch):
    """What makes the fix safe: on the normal path the `finally` meets a child that `wait()`
    already reaped (here one that led its own session and left a grandchild in its group);
    `terminate_process_groups` then signals nothing (its pid may already be another
    process's) and returns the status at once. The grandchild lives on, as without the fix."""
    import runtime_guard

    child = subprocess.Popen(["sh", "-c", "sleep 30 & echo $!"], stdout=subprocess.PIPE, text=True,
                             start_new_session=True)
    grandchild = int(child.stdout.readline())
    try:
        assert child.wait(timeout=10) == 0
        sent = []
        real_killpg, real_kill = os.killpg, os.kill
        monkeypatch.setattr(os, "killpg", lambda *a: (sent.append(("killpg", a)), real_killpg(*a)))
        monkeypatch.setattr(os, "kill", lambda *a: (sent.append(("kill", a)), real_kill(*a)))
        t0 = time.monotonic()
        assert runtime_guard.terminate_process_groups([child]) == [0]
        assert time.monotonic() - t0 < 5 and sent == []
        assert _alive(grandchild)
    finally:
        child.stdout.close()
        try:
            os.kill(grandchild, signal.SIGKILL)
        except ProcessLookupError:
            pass


UNSAFE = textwrap.dedent('''
    import subprocess
    import sys

    def prepare():
        print("prepared", flush=True)

    def main(mode, pidfile):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(pidfile, "w") as f:
            f.write(str(child.pid))
        prepare()
        if mode == "detach":
            print("left running", flush=True)
            return
        child.terminate()
        child.wait()

    if __name__ == "__main__":
        main(*sys.argv[1:])
''')


@pytest.mark.timeout(90)
def test_unsafe_when_a_normal_path_leaves_before_the_wait(tmp_path):
    """The same edit is labelled unsafe when the region can return before the wait: on that
    normal path (`detach`) the original leaves the child running on purpose, the fixed
    program's `finally` ends it. Measured: same output and status, the child's fate differs."""
    src = tmp_path / "unsafe.py"
    src.write_text(UNSAFE)
    diags = lint_source(UNSAFE.encode(), str(src), SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD602"] and diags[0].fix is not None
    assert fix_source(UNSAFE.encode(), str(src), SETTINGS, unsafe=False).source == UNSAFE.encode()
    fixed_src = fix_source(UNSAFE.encode(), str(src), SETTINGS, unsafe=True).source
    assert b"finally:\n        runtime_guard.terminate_process_groups([child])" in fixed_src
    fixed = tmp_path / "unsafe_fixed.py"
    fixed.write_bytes(fixed_src)
    fates = []
    for path in (src, fixed):
        pidfile = tmp_path / f"{path.stem}.pid"
        run = subprocess.run([sys.executable, str(path), "detach", str(pidfile)], cwd=REPO, env=ENV,
                             capture_output=True, text=True, timeout=60)
        pid = int(pidfile.read_text())
        time.sleep(0.5)
        fates.append((run.returncode, run.stdout, run.stderr, _alive(pid)))
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    assert fates[0] == (0, "prepared\nleft running\n", "", True)
    assert fates[1] == (0, "prepared\nleft running\n", "", False)  # the normal-path difference


MP = textwrap.dedent('''
    import multiprocessing
    import sys
    import time

    def produce():
        time.sleep(6)  # a data loader's work

    def main(mode):
        loader = multiprocessing.Process(target=produce)
        loader.start()
        print("started", flush=True)
        if mode == "raise":
            raise RuntimeError("fit failed")
        while True:
            time.sleep(0.05)
        loader.join()

    if __name__ == "__main__":
        main(sys.argv[1])
''')


@pytest.mark.timeout(90)
@pytest.mark.parametrize("mode", ["raise", "sigint"])
def test_multiprocessing_child_holds_the_parent_at_exit(tmp_path, mode):
    """A non-daemon multiprocessing child with no stop on the exception path: the parent's
    exit handler joins it, so the parent that raised (or got SIGINT alone) lives on until the
    child's 6 s of work are done. SHD602 reports it (no fix: the helper takes Popen objects)."""
    path = tmp_path / "mp.py"
    path.write_text(MP)
    diags = lint_source(MP.encode(), str(path), SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD602"] and "joins every non-daemon child" in diags[0].message
    assert diags[0].fix is None
    with PipedChild([sys.executable, path, mode], cwd=REPO, env=ENV) as proc:
        proc.expect("started")
        t0 = time.monotonic()
        if mode == "sigint":
            proc.send_signal(signal.SIGINT)
        status, _, _ = proc.finish(60)
        took = time.monotonic() - t0
    assert status == (1 if mode == "raise" else -signal.SIGINT)
    assert took > 4.0, f"the parent exited after {took:.1f} s: it did not wait for the child"
