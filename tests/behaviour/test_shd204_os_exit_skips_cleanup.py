"""SHD204 os-exit-skips-cleanup, for real: an experiment tracker that syncs its buffered
metrics in an ``atexit`` handler (the way wandb and swanlab do), and a Ctrl+C handler that
ends the run with ``os._exit`` (Flow-Factory #149).

1. Hazard: SIGINT during training: exit status 130, and the metrics file was never written.
   ``fix_source`` output (``runtime_guard.hard_exit(130)``): same status, every logged step
   is in the file.
2. An ``atexit`` handler that hangs: a normal exit (``sys.exit(130)``) runs it without a
   bound and is still alive 8 s later; ``hard_exit`` abandons it after its bound (set to
   1 s here) and the process ends by itself.
3. One statement, one finding: ``os._exit(0)`` in ``except KeyboardInterrupt`` with SHD202
   and SHD204 both selected is reported once, and its fix writes ``hard_exit(130)``.
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

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD204",), target_version="py311")

TRAINER = textwrap.dedent(
    '''
    import atexit
    import os
    import sys
    import threading
    import time


    class Tracker:
        """Buffers metrics and syncs them when the process exits, like wandb's atexit hook."""

        def __init__(self, path):
            self.path = path
            self.rows = []
            atexit.register(self.finish)

        def log(self, step):
            self.rows.append(f"step {step}")

        def finish(self):
            with open(self.path, "w") as f:
                f.write("\\n".join(self.rows) + "\\n")


    def main(path, hang):
        tracker = Tracker(path)
        if hang:
            atexit.register(threading.Event().wait)  # a handler that never returns (runs first)
        try:
            for step in range(10_000):
                tracker.log(step)
                if step == 5:
                    print("WAITING", flush=True)
                time.sleep(0.05)
        except KeyboardInterrupt:
            # bypass NCCL heartbeat noise
            os._exit(130)


    if __name__ == "__main__":
        main(sys.argv[1], sys.argv[2] == "hang")
    '''
).lstrip()


def _codes(source: str, settings: Settings = SETTINGS) -> list[str]:
    result = lint_source(source.encode(), "prog.py", settings)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _interrupt(tmp_path: Path, source: str, hang: bool, wait: float) -> tuple[bool, int, str]:
    """Run, send SIGINT after step 5; (ended by itself within ``wait``, status, metrics file)."""
    prog, metrics = tmp_path / "prog.py", tmp_path / "metrics.txt"
    metrics.unlink(missing_ok=True)
    prog.write_text(source)
    proc = subprocess.Popen([sys.executable, str(prog), str(metrics), "hang" if hang else "-"], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "WAITING"
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=wait)
            ended = True
        except subprocess.TimeoutExpired:
            ended = False
            proc.kill()
            proc.wait(timeout=10)
        return ended, proc.returncode, metrics.read_text() if metrics.exists() else ""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def _fixed(source: str) -> str:
    out = fix_source(source.encode(), "prog.py", SETTINGS).source.decode()  # a safe fix
    assert "runtime_guard.hard_exit(130)" in out and "os._exit(" not in out
    assert _codes(out) == []
    return out


@pytest.mark.timeout(90)
def test_os_exit_loses_the_atexit_metrics_and_hard_exit_keeps_them(tmp_path):
    assert _codes(TRAINER) == ["SHD204"]
    ended, status, metrics = _interrupt(tmp_path, TRAINER, hang=False, wait=20)
    assert ended and status == 130
    assert metrics == "", "os._exit should skip the tracker's atexit sync"

    ended, status, metrics = _interrupt(tmp_path, _fixed(TRAINER), hang=False, wait=20)
    assert ended and status == 130
    rows = metrics.splitlines()
    assert len(rows) >= 6 and rows[:6] == [f"step {i}" for i in range(6)]


@pytest.mark.timeout(120)
def test_a_hung_atexit_handler_blocks_a_normal_exit_but_not_hard_exit(tmp_path):
    normal = TRAINER.replace("os._exit(130)", "sys.exit(130)")
    ended, _, metrics = _interrupt(tmp_path, normal, hang=True, wait=8)
    assert not ended, "a normal exit runs the hung atexit handler without a bound"

    bounded = _fixed(TRAINER).replace("runtime_guard.hard_exit(130)", "runtime_guard.hard_exit(130, atexit_timeout=1)")
    ended, status, metrics = _interrupt(tmp_path, bounded, hang=True, wait=30)
    assert ended and status == 130
    assert metrics == ""  # the tracker's handler was due after the hung one: abandoned with it


def test_one_finding_for_os_exit_zero_on_ctrl_c_with_shd202_selected():
    source = textwrap.dedent(
        '''
        import os
        try:
            train()
        except KeyboardInterrupt:
            os._exit(0)
        '''
    )
    both = Settings(selected=("SHD202", "SHD204"), target_version="py311")
    result = lint_source(source.encode(), "prog.py", both)
    assert [d.code for d in result.diagnostics] == ["SHD204"]
    assert "status 0" in result.diagnostics[0].message
    fixed = fix_source(source.encode(), "prog.py", both).source.decode()
    assert "runtime_guard.hard_exit(130)" in fixed
    assert _codes(fixed, both) == []
    # SHD202 alone still reports it, also when SHD204 is switched off for the file
    alone = lint_source(source.encode(), "prog.py", Settings(selected=("SHD202",), target_version="py311"))
    assert [d.code for d in alone.diagnostics] == ["SHD202"]
    ignored = Settings(selected=("SHD202", "SHD204"), target_version="py311",
                       per_file_ignores=(("prog.py", ("SHD204",)),))
    assert [d.code for d in lint_source(source.encode(), "prog.py", ignored).diagnostics] == ["SHD202"]


# os._exit in the `except` of a function a forked child runs (the rule does not see the fork):
# there os._exit is the right call, and hard_exit must keep what it did.
FORKED = textwrap.dedent(
    '''
    import atexit
    import os
    import sys


    def work(fail):
        if fail:
            raise RuntimeError("boom")
        return 3


    def child(fail):
        try:
            status = work(fail)
        except Exception:
            os._exit(7)
        os._exit(status)


    def main(fail):
        atexit.register(print, "parent atexit")
        print("parent line")  # stays in the buffer: stdout is a pipe
        pid = os.fork()
        if pid == 0:
            child(fail)
        _, status = os.waitpid(pid, 0)
        print("child status", os.waitstatus_to_exitcode(status))


    if __name__ == "__main__":
        main(sys.argv[1] == "fail")
    '''
).lstrip()


@pytest.mark.timeout(60)
def test_in_a_forked_child_and_on_the_normal_path_nothing_changes(tmp_path):
    assert _codes(FORKED) == ["SHD204"]
    fixed = fix_source(FORKED.encode(), "prog.py", SETTINGS).source.decode()  # a safe fix
    assert "runtime_guard.hard_exit(7)" in fixed and "os._exit(status)" in fixed
    runs = {}
    for name, text in (("original", FORKED), ("fixed", fixed)):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        for arg in ("ok", "fail"):
            done = subprocess.run([sys.executable, str(path), arg], env=ENV, capture_output=True, text=True,
                                  timeout=30)
            runs[name, arg] = (done.returncode, done.stdout)
    # normal path (the except is not reached) and the child's failure alike: the parent's
    # buffered line is written once, its atexit handler runs once (in the parent), same status
    assert runs["original", "ok"] == runs["fixed", "ok"] == (0, "parent line\nchild status 3\nparent atexit\n")
    assert runs["original", "fail"] == runs["fixed", "fail"] == (0, "parent line\nchild status 7\nparent atexit\n")
