"""SHD202 for real: SIGINT to a program whose Ctrl+C handler calls sys.exit(0).

Hazard: the interrupted run exits with status 0 (a scheduler records success).
Fixed (the exact autofix output): status 130.
"""
from __future__ import annotations

import os
import signal
import sys
import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild
from signal_driver import signalled

SETTINGS = Settings(selected=("SHD202",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the fixed program imports runtime_guard from this checkout
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))

HAZARD = textwrap.dedent('''
    import sys
    import time

    def train():
        print("ready", flush=True)
        while True:
            time.sleep(0.05)  # a training step

    def main():
        try:
            train()
        except KeyboardInterrupt:
            print("interrupted, cleaning up", flush=True)
            sys.exit(0)

    if __name__ == "__main__":
        main()
''')


def _interrupt(path) -> tuple[int, str]:
    return _signal(path, signal.SIGINT)


@pytest.mark.timeout(90)
def test_ctrl_c_exit_status_before_and_after_fix(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD202"]

    rc, out = _interrupt(hazard)
    assert "cleaning up" in out
    assert rc == 0  # the damage: an interrupted run reports success

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"sys.exit(130)" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    rc, out = _interrupt(fixed)
    assert "cleaning up" in out
    assert rc == 130


# Exit paths: the handler cleans up and falls through; main() returns to the __main__ block.
FALLS_THROUGH = textwrap.dedent('''
    import time

    def train():
        print("ready", flush=True)
        while True:
            time.sleep(0.05)

    def main():
        try:
            train()
        except KeyboardInterrupt:
            print("interrupted, cleaning up", flush=True)

    if __name__ == "__main__":
        main()
''')

# A SIGTERM handler that shuts down and exits 0: a preempted job is recorded as done.
SIGTERM_ZERO = textwrap.dedent('''
    import signal
    import sys
    import time

    def save_checkpoint():
        print("interrupted, cleaning up", flush=True)

    def on_sigterm(signum, frame):
        save_checkpoint()
        sys.exit(0)

    signal.signal(signal.SIGTERM, on_sigterm)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
''')


# Python 3.11+: Ctrl+C cancels asyncio.run's main task; a handler that also catches the
# cancellation and returns makes asyncio.run return normally. The coroutine waits in short sleeps:
# asyncio.run's SIGINT handler is a Python handler and sets no wakeup fd, so a SIGINT that lands
# just before the loop's epoll_wait would wait for one long sleep's timer (60 s) to run.
ASYNC_MAIN = textwrap.dedent('''
    import asyncio

    async def amain():
        try:
            print("ready", flush=True)
            for _ in range(1200):
                await asyncio.sleep(0.05)
        except (KeyboardInterrupt, asyncio.CancelledError):
            print("interrupted, cleaning up", flush=True)

    if __name__ == "__main__":
        asyncio.run(amain())
''')


def _signal(path, sig) -> tuple[int, str]:
    rc, out, _ = signalled([path], sig, cwd=REPO, env=ENV)
    return rc, out


# One handler for both signals: the fix writes `128 + sig`.
BOTH_SIGNALS = textwrap.dedent('''
    import signal
    import sys
    import time

    def save_checkpoint():
        print("interrupted, cleaning up", flush=True)

    def stop(sig, frame):
        save_checkpoint()
        sys.exit()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
''')


@pytest.mark.timeout(90)
@pytest.mark.parametrize("source, sig, status", [
    (FALLS_THROUGH, signal.SIGINT, 130),
    (SIGTERM_ZERO, signal.SIGTERM, 143),
    (ASYNC_MAIN, signal.SIGINT, 130),
    (BOTH_SIGNALS, signal.SIGINT, 130),
    (BOTH_SIGNALS, signal.SIGTERM, 143),
], ids=["handler-falls-through-to-main", "sigterm-handler-exit-0", "asyncio-run-swallows-cancel",
        "both-signals-sigint", "both-signals-sigterm"])
def test_exit_paths_status_before_and_after_fix(tmp_path, source, sig, status):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(source)
    assert [d.code for d in lint_source(source.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD202"]
    rc, out = _signal(hazard, sig)
    assert "cleaning up" in out
    assert rc == 0  # an interrupted run reports success

    fixed_src = fix_source(source.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    rc, out = _signal(fixed, sig)
    assert "cleaning up" in out
    assert rc == status


# Three shapes, each run without and with Ctrl+C. `steps` in argv: the run ends by itself.
SHAPES = {
    "status-argument": HAZARD,
    "raise-SystemExit": HAZARD.replace("sys.exit(0)", "raise SystemExit(0)"),
    "handler-falls-through": textwrap.dedent('''
        import sys
        import time

        def train(steps):
            print("ready", flush=True)
            for _ in range(steps):
                time.sleep(0.05)  # a training step

        def main():
            try:
                train(int(sys.argv[1]))
            except KeyboardInterrupt:
                print("interrupted, cleaning up", flush=True)
            print("after the handler: final save", flush=True)

        if __name__ == "__main__":
            main()
    '''),
}
SHAPES["status-argument"] = SHAPES["status-argument"].replace("    while True:", "    for _ in range(int(sys.argv[1])):")
SHAPES["raise-SystemExit"] = SHAPES["raise-SystemExit"].replace("    while True:", "    for _ in range(int(sys.argv[1])):")


def _run_shape(path, steps: int, interrupt: bool) -> tuple[int, str]:
    with PipedChild([sys.executable, path, steps], cwd=REPO, env=ENV) as proc:
        first = proc.readline()
        if interrupt:
            proc.send_signal(signal.SIGINT)
        status, out, _ = proc.finish(30)
    return status, first + out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape, label", [
    ("status-argument", "safe"), ("raise-SystemExit", "safe"), ("handler-falls-through", "unsafe"),
])
def test_each_fix_shape_on_the_normal_and_the_interrupted_path(tmp_path, shape, label):
    source = SHAPES[shape]
    (found,) = lint_source(source.encode(), "prog.py", SETTINGS).diagnostics
    assert found.fix["applicability"] == label
    fixed_src = fix_source(source.encode(), "prog.py", SETTINGS, unsafe=True).source
    assert b"130" in fixed_src
    original, fixed = tmp_path / "original.py", tmp_path / "fixed.py"
    original.write_text(source)
    fixed.write_bytes(fixed_src)
    # normal path (the run ends by itself): same output and status
    assert _run_shape(original, 3, False) == _run_shape(fixed, 3, False)
    assert _run_shape(fixed, 3, False)[0] == 0
    # the hazard's path: the status becomes 130
    rc0, out0 = _run_shape(original, 10_000, True)
    rc1, out1 = _run_shape(fixed, 10_000, True)
    assert (rc0, rc1) == (0, 130)
    if label == "safe":
        assert out0 == out1  # only the status changed
    else:
        # why the appended exit is unsafe: the code after the handler no longer runs
        assert out0.splitlines()[-1] == "after the handler: final save"
        assert "final save" not in out1 and "cleaning up" in out1
