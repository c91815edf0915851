"""SHD407 for real: an event loop in a daemon thread at interpreter exit and on SIGTERM.

Hazard: a rollout server runs `asyncio.run(...)` in a `daemon=True` thread; its 5 tasks each
hold a lease file removed in their `finally`. When the main thread ends, the daemon thread
is frozen mid-step: 5 of 5 leases are left behind. SIGTERM kills the process before any
Python code runs: 5 of 5 again. Fixed (the exact autofix output, `runtime_guard.LoopThread`):
0 left in both cases.

Normal path unchanged (issue 26): the same stdout, the same exit status (0 at a normal exit;
SIGTERM still kills the process with -15 after the loop's cleanup), and the children the loop
starts (`bash -c` in its own session, a `multiprocessing` child with `fork` and one with `spawn`)
still die of SIGTERM (-15) within 1 s, before and after. The last is what `LoopThread` broke
when it blocked SIGINT/SIGTERM in its thread: every child inherited the mask and survived.
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

SETTINGS = Settings(selected=("SHD407",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
N = 5

HAZARD = textwrap.dedent('''
    import asyncio
    import multiprocessing
    import os
    import signal
    import subprocess
    import sys
    import threading
    import time

    LEASE_DIR, MODE = sys.argv[1], sys.argv[2]


    def child_work(ready):
        ready.set()  # after fork's hooks: a SIGTERM before them could be dropped with the parent's handler
        time.sleep(30)


    def start_and_stop_children():
        """What a server's loop does with its tools: start a command and workers, end them with SIGTERM."""
        fates = []
        proc = subprocess.Popen(["bash", "-c", "sleep 30"], start_new_session=True)
        time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10.0)  # a liveness bound: SIGTERM's default action ends it at once
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            fates.append("bash survived SIGTERM")
        else:
            fates.append(f"bash {proc.returncode}")
        for method in ("fork", "spawn"):
            ctx = multiprocessing.get_context(method)
            ready = ctx.Event()
            p = ctx.Process(target=child_work, args=(ready,))
            p.start()
            ready.wait(30)
            p.terminate()
            p.join(10.0)
            if p.is_alive():
                p.kill()
                p.join()
                fates.append(f"{method} survived SIGTERM")
            else:
                fates.append(f"{method} {p.exitcode}")
        return fates


    async def hold_lease(i):
        path = os.path.join(LEASE_DIR, f"lease-{i}")
        open(path, "w").close()
        try:
            while True:
                await asyncio.sleep(0.05)  # serve rollouts
        finally:
            await asyncio.sleep(0.1)  # tell the sandbox service
            os.remove(path)


    async def serve():
        print("children:", *start_and_stop_children(), flush=True)
        await asyncio.gather(*[hold_lease(i) for i in range(%d)])


    def run_server():
        asyncio.run(serve())


    def main():
        threading.Thread(target=run_server, daemon=True).start()
        while len(os.listdir(LEASE_DIR)) < %d:
            time.sleep(0.02)
        print("ready", flush=True)
        if MODE == "wait":
            for _ in range(1200):  # SIGTERM arrives here (short sleeps: the fix's handler is a Python one)
                time.sleep(0.05)


    if __name__ == "__main__":
        main()
''' % (N, N))


def _run(path, lease_dir, mode: str) -> tuple[int, list[str], str, str]:
    with PipedChild([sys.executable, path, lease_dir, mode], cwd=REPO, env=ENV) as proc:
        first = proc.readline()
        proc.expect("ready")
        if mode == "wait":
            proc.send_signal(signal.SIGTERM)
        status, out, err = proc.finish(30)
    return status, sorted(os.listdir(lease_dir)), first + "ready\n" + out, err


@pytest.mark.timeout(180)
def test_daemon_loop_leaks_at_exit_and_on_sigterm_and_the_fix_cleans_up(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD407"]
    # unsafe (issue 26): the SIGTERM handler it installs changes paths where no loop is frozen
    assert fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=False).source == HAZARD.encode()
    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"runtime_guard.LoopThread(target=run_server, daemon=True).start()" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)

    results = {}
    for name, path in (("before", hazard), ("after", fixed)):
        for mode in ("exit", "wait"):
            leases = tmp_path / f"{name}-{mode}"
            leases.mkdir()
            results[name, mode] = _run(path, leases, mode)

    rc, left, out, _ = results["before", "exit"]
    assert rc == 0 and len(left) == N  # the main thread ended; the daemon loop was frozen
    assert out == "children: bash -15 fork -15 spawn -15\nready\n", out
    rc, left, _, _ = results["before", "wait"]
    assert rc == -signal.SIGTERM and len(left) == N  # killed before any cleanup
    # the normal path: the same output (the children's fate included) and exit status, both modes
    for mode in ("exit", "wait"):
        assert results["after", mode][2] == results["before", mode][2], (mode, results["after", mode])
        assert results["after", mode][0] == results["before", mode][0], (mode, results["after", mode])
    # the hazard gone
    rc, left, _, err = results["after", "exit"]
    assert rc == 0 and left == [], err
    rc, left, _, err = results["after", "wait"]
    assert rc == -signal.SIGTERM and left == [], err  # cleaned up, then died of SIGTERM as before


# ---------------------------------------------------------------------------------------------
# The fix audit's N1 (docs/fix-audit.md): the program's own exit code still uses the loop.
# The usual `run(coro)` bridge (trl `HarborEnv.__del__`, slime `AsyncLoopThread.run`, verl
# `_run_async_safely`): an atexit handler closes a client that lives on the loop by submitting
# a coroutine and waiting for its result. With a plain daemon thread the loop still runs while
# atexit handlers run: `atexit hook: client closed`, status 0. LoopThread used to stop the loop
# from threading's exit hook, before every atexit handler: the handler then waited forever.

BRIDGE = textwrap.dedent('''
    import asyncio
    import atexit
    import threading


    class AsyncLoopThread:
        def __init__(self):
            self.loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._start_loop, daemon=%s)
            self._thread.start()

        def _start_loop(self):
            asyncio.set_event_loop(self.loop)
            self.loop.run_forever()

        def run(self, coro):
            return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


    async def close_client():
        await asyncio.sleep(0.05)
        return "client closed"


    def _close_at_exit():
        try:
            print("atexit hook:", BRIDGE.run(close_client()), flush=True)
        except RuntimeError as exc:
            print("atexit hook: RuntimeError:", exc, flush=True)


    %s
    print("main done", flush=True)
''')
REGISTER = {
    "before": "atexit.register(_close_at_exit)\nBRIDGE = AsyncLoopThread()",
    "after": "BRIDGE = AsyncLoopThread()\natexit.register(_close_at_exit)",
}


def _bridge(daemon: bool, when: str) -> str:
    return BRIDGE % (daemon, REGISTER[when])


def _run_to_end(path, timeout: float, after_line: "str | None" = None) -> tuple:
    """(returncode or 'hung', stdout, stderr): ends the child (SIGKILL) if it is still running at `timeout`
    (counted from when it printed ``after_line``, if given)."""
    head = ""
    with PipedChild([sys.executable, path], cwd=REPO, env=ENV) as proc:
        if after_line is not None:
            head = proc.readline()
            assert head == after_line, head
        killed, status, out, err = proc.finish_or_kill(timeout, reap=30)
        return "hung" if killed else status, head + out, err


@pytest.mark.timeout(240)
@pytest.mark.parametrize("when", ["before", "after"])
def test_daemon_loop_still_serves_the_programs_atexit_handler_after_the_fix(tmp_path, when):
    source = _bridge(True, when)
    original = tmp_path / "original.py"
    original.write_text(source)
    assert [d.code for d in lint_source(source.encode(), str(original), SETTINGS).diagnostics] == ["SHD407"]
    fixed_src = fix_source(source.encode(), str(original), SETTINGS, unsafe=True).source
    assert b"runtime_guard.LoopThread(target=self._start_loop, daemon=True)" in fixed_src
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    before = _run_to_end(original, 120)
    after = _run_to_end(fixed, 120)  # generous: today it finishes in well under a second
    assert before[:2] == (0, "main done\natexit hook: client closed\n"), before
    assert after[:2] == before[:2], after  # the same output, status 0, no hang
    assert "Traceback" not in after[2], after[2]


@pytest.mark.timeout(240)
@pytest.mark.parametrize("when", ["before", "after"])
def test_non_daemon_loop_thread_lets_the_process_exit_and_a_late_submission_fails_fast(tmp_path, when):
    # Not SHD407's finding (a non-daemon thread keeps the process alive instead): with a plain
    # non-daemon thread the interpreter joins it before any atexit handler runs, and nobody stops
    # run_forever: the exit hangs. LoopThread(daemon=False) stops it before that join (that is
    # what lets the process exit at all), so the atexit handler that runs afterwards finds the loop
    # stopped: it must fail at once ("Event loop is closed"), not wait forever.
    source = _bridge(False, when)
    original = tmp_path / "original.py"
    original.write_text(source)
    assert lint_source(source.encode(), str(original), SETTINGS).diagnostics == []
    swapped = tmp_path / "loop_thread.py"
    swapped.write_text("import runtime_guard\n" + source.replace("threading.Thread(", "runtime_guard.LoopThread("))
    # hangs forever in the join: still running 3 s after "main done", where the LoopThread version
    # below has ended (status 0) 0.04 s after that line (measured 3 times)
    before = _run_to_end(original, 3, after_line="main done\n")
    assert before[:2] == ("hung", "main done\n"), before
    after = _run_to_end(swapped, 120)  # generous: today it finishes in well under a second
    assert after[:2] == (0, "main done\natexit hook: RuntimeError: Event loop is closed\n"), after
