"""SHD602 for real, a child kept on ``self`` (issue 28): an object launches a Python child that
writes a heartbeat file every 50 ms and keeps it as ``self.router_process`` (rllm's
``InferenceManager`` shape: nothing in the class stops it). The parent then raises, or
finishes normally. Hazard: after the parent has exited (status 1, or 0 on the normal path),
the child is still alive (not a zombie) and its heartbeat keeps changing. With a ``close()``
that terminates and waits for the child, called from a ``finally`` (what the message asks
for), the child is gone when the parent has exited, and the exit status and last line of
stderr are unchanged. The rule flags the first program and not the second."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

from test_shd602_child_process import _alive, _beating

SETTINGS = Settings(selected=("SHD602",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_PROGRAM = '''
    import subprocess
    import sys

    HEARTBEAT = """
    import sys, time
    end = time.monotonic() + 60
    while time.monotonic() < end:
        with open(sys.argv[1], "w") as f:
            f.write(str(time.monotonic()))
        time.sleep(0.05)
    """

    class InferenceManager:
        def launch_router(self, beat):
            self.router_process = subprocess.Popen([sys.executable, "-c", HEARTBEAT, beat],
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return "http://127.0.0.1:30000"
    {close}
    def main(mode, pidfile, beat):
        manager = InferenceManager()
        {try_}
            manager.launch_router(beat)
            with open(pidfile, "w") as f:
                f.write(str(manager.router_process.pid))
            print("started", flush=True)
            if mode == "raise":
                raise RuntimeError("evaluation failed")
            print("done", flush=True)
        {finally_}

    if __name__ == "__main__":
        main(*sys.argv[1:])
'''
HAZARD = textwrap.dedent(_PROGRAM.format(close="", try_="if True:", finally_=""))
FIXED = textwrap.dedent(_PROGRAM.format(
    close="""
        def close(self):
            self.router_process.terminate()
            self.router_process.wait()
""", try_="try:", finally_="""finally:
            manager.close()"""))


def _run(path, mode, tmp_path, tag):
    pidfile, beat = tmp_path / f"{tag}-{mode}.pid", tmp_path / f"{tag}-{mode}.beat"
    proc = subprocess.Popen([sys.executable, str(path), mode, str(pidfile), str(beat)], cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    pid = None
    try:
        out, err = proc.communicate(timeout=60)  # liveness bound
        pid = int(pidfile.read_text())
        time.sleep(1.0)
        alive = _alive(pid)
        return proc.returncode, out, err, alive, _beating(beat, 5.0 if alive else 1.0)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)  # what the hazard left behind


@pytest.fixture(scope="module")
def programs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shd602_self")
    hazard, fixed = tmp / "hazard.py", tmp / "fixed.py"
    hazard.write_text(HAZARD)
    fixed.write_text(FIXED)
    diags = lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics
    assert [d.code for d in diags] == ["SHD602"]
    assert "`self.router_process`" in diags[0].message and "`InferenceManager`" in diags[0].message
    assert lint_source(FIXED.encode(), str(fixed), SETTINGS).diagnostics == []
    return hazard, fixed


@pytest.mark.timeout(120)
@pytest.mark.parametrize("mode", ["raise", "normal"])
def test_child_on_self_outlives_the_parent_and_not_after_close(programs, mode, tmp_path):
    hazard, fixed = programs
    rc, out, err, alive, beating = _run(hazard, mode, tmp_path, "hazard")
    assert rc == (1 if mode == "raise" else 0)
    assert alive and beating, f"{mode}: the child should survive the parent"
    rc2, out2, err2, alive2, beating2 = _run(fixed, mode, tmp_path, "fixed")
    assert (rc2, out2) == (rc, out)
    if mode == "raise":
        assert err.splitlines()[-1] == err2.splitlines()[-1] == "RuntimeError: evaluation failed"
    assert not alive2 and not beating2, f"{mode}: the child survived the parent with close() in a finally"
