"""runtime_guard under stress, each scenario in its own subprocess with a timeout:
no deadlock (the child exits by itself), no exception escapes (nothing on stderr that
looks like a traceback unless expected), no lost report (counted in the child)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from piped_child import PipedChild

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(code: str, timeout: float = 90, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("RUNTIME_GUARD", None)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=REPO, **kw)


def _no_escaped_exception(stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr[-3000:]


@pytest.mark.timeout(120)
def test_thousands_of_supervised_tasks_all_reported():
    proc = _run(
        """
        import asyncio, logging, runtime_guard
        failures = []
        class Count(logging.Handler):
            def emit(self, record):
                if "failed" in record.getMessage():
                    failures.append(record)
        logging.getLogger("runtime_guard").addHandler(Count())
        logging.getLogger("runtime_guard").propagate = False

        async def job(i):
            await asyncio.sleep(0)
            if i % 3 == 0:
                raise ValueError(i)
            return i

        async def main():
            tasks = [runtime_guard.supervise(asyncio.create_task(job(i)), on_error="log") for i in range(5000)]
            done = await asyncio.gather(*tasks, return_exceptions=True)
            await asyncio.sleep(0.1)
            return sum(isinstance(d, ValueError) for d in done)

        raised = asyncio.run(main())
        from runtime_guard import tasks as T
        print("raised", raised, "reported", len(failures), "still-held", len(T._tasks))
        """
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "raised 1667 reported 1667 still-held 0" in proc.stdout, proc.stdout + proc.stderr[-2000:]


@pytest.mark.timeout(120)
def test_watchdog_with_100_loops_in_100_threads_reports_every_stall():
    proc = _run(
        """
        import asyncio, threading, time, runtime_guard
        reports, ended = [], []
        lock = threading.Lock()
        class Sink:
            def __call__(self, r):
                with lock: reports.append(r.thread_name)
            def stall_ended(self, r):
                with lock: ended.append(r.thread_name)
        runtime_guard.install_watchdog(threshold=0.2, on_stall=Sink(), hard_threshold=None)

        async def body(i):
            await asyncio.sleep(0.3)
            if i % 10 == 0:
                time.sleep(0.8)  # a blocking call: one stall in every tenth loop
            await asyncio.sleep(0.3)

        threads = [threading.Thread(target=lambda i=i: asyncio.run(body(i)), name=f"loop-{i}") for i in range(100)]
        for t in threads: t.start()
        for t in threads: t.join(60)
        time.sleep(0.5)
        alive = sum(t.is_alive() for t in threads)
        stalled = sorted(set(reports))
        print("alive", alive, "stalled", len(stalled), "ended", len(set(ended)))
        print("names", stalled)
        """
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _no_escaped_exception(proc.stderr)
    first = proc.stdout.splitlines()[0]
    alive, stalled, ended = (int(x) for x in first.split()[1::2])
    assert alive == 0
    # every blocked loop is reported and its end recorded (threads starved of the GIL by
    # 100 busy loops may add a few extra, honest reports)
    expected = {f"loop-{i}" for i in range(0, 100, 10)}
    names = set(eval(proc.stdout.splitlines()[1][len("names "):]))
    assert expected <= names, sorted(expected - names)
    assert ended >= len(expected)


@pytest.mark.timeout(60)
def test_loop_that_stalls_forever_is_reported_and_the_process_can_still_exit():
    with PipedChild(
        [sys.executable, "-c", textwrap.dedent(
            """
            import asyncio, sys, time, runtime_guard
            def on_stall(r):
                print("STALL", r.function, flush=True)
            runtime_guard.install_watchdog(threshold=0.2, on_stall=on_stall, hard_threshold=None)
            async def main():
                while True:
                    time.sleep(3600)  # never yields
            asyncio.run(main())
            """)],
        env=dict(os.environ, PYTHONPATH=REPO), cwd=REPO) as proc:
        line = proc.readline()
        assert line.startswith("STALL main"), line
        time.sleep(1.0)
        assert proc.poll() is None  # still stalled: the watchdog reports, it does not kill
        # asyncio.run: the first Ctrl+C cancels the main task (which never awaits), the
        # second raises KeyboardInterrupt
        for _ in range(2):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.5)
        status, _, err = proc.finish(20)
    assert status != 0 and "KeyboardInterrupt" in err, err[-2000:]


@pytest.mark.timeout(60)
def test_interpreter_shutdown_while_a_stall_is_being_reported():
    """The sink is still writing when the main thread exits: no deadlock, no traceback,
    and the report is in the file (the JSON-lines sink writes it before returning)."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "stall.jsonl")
        env = dict(os.environ, PYTHONPATH=REPO, REPORT=path)
        proc = subprocess.run([sys.executable, "-c", textwrap.dedent(
            """
            import asyncio, os, time, runtime_guard
            def slow_sink(r):
                time.sleep(2.0)  # the sink is still busy when the interpreter shuts down
            runtime_guard.install_watchdog(threshold=0.1, on_stall=slow_sink, report_file=os.environ["REPORT"],
                                           hard_threshold=None)
            async def main():
                time.sleep(0.5)
            asyncio.run(main())
            print("main done", flush=True)
            """)], capture_output=True, text=True, timeout=30, env=env, cwd=REPO)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "main done" in proc.stdout
        _no_escaped_exception(proc.stderr)
        with open(path) as fh:
            events = [line for line in fh if line.strip()]
        assert any('"event": "stall"' in e for e in events), events


@pytest.mark.timeout(60)
def test_fork_after_starting_the_watchdog():
    proc = _run(
        """
        import asyncio, os, sys, time, runtime_guard
        seen = []
        runtime_guard.install_watchdog(threshold=0.2, on_stall=lambda r: seen.append(os.getpid()), hard_threshold=None)
        async def stall():
            await asyncio.sleep(0.05)
            time.sleep(0.6)
            await asyncio.sleep(0.4)
        asyncio.run(stall())            # the monitor thread is running now
        pid = os.fork()
        if pid == 0:
            try:
                before = len(seen)      # the list was copied from the parent
                asyncio.run(stall())    # a new loop in the child is watched by a new monitor
                mine = seen[before:]
                os._exit(0 if mine and all(p == os.getpid() for p in mine) else 3)
            except BaseException:
                os._exit(4)
        _, status = os.waitpid(pid, 0)
        print("child", os.waitstatus_to_exitcode(status), "parent-reports", len(seen))
        """,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    _no_escaped_exception(proc.stderr)
    assert "child 0 parent-reports 1" in proc.stdout, proc.stdout + proc.stderr[-2000:]


@pytest.mark.timeout(60)
def test_signals_arriving_during_cleanup_do_not_skip_or_hang_it():
    """SIGTERM, then Ctrl+C, then SIGTERM again while on_interrupt's cleanup hangs: the
    process ends with the interrupt status, without a traceback, by the second interrupt
    or at the latest by the cleanup timeout. (Under load the second signal can land on
    runtime_guard's timer thread and then waits for the timeout: see docs/robustness.md.)"""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        marker = os.path.join(d, "cleanup-started")
        with PipedChild([sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(
            f"""
            import time, runtime_guard
            runtime_guard.sigterm_as_keyboard_interrupt(anywhere=True)  # sync code: no event loop
            def cleanup():
                open({marker!r}, "w").close()
                time.sleep(60)  # a cleanup that would hang
            with runtime_guard.on_interrupt(cleanup, exit_code=130, timeout=8):
                print("ready", flush=True)
                for _ in range(1200):  # short waits: the first SIGTERM must not wait for one long sleep
                    time.sleep(0.05)
            """)], env=dict(os.environ, PYTHONPATH=REPO), cwd=REPO) as proc:
            proc.expect("ready")
            proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 20
            while not os.path.exists(marker) and time.monotonic() < deadline:
                time.sleep(0.05)
            assert os.path.exists(marker), "cleanup never started"
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    proc.send_signal(sig)
                except ProcessLookupError:
                    break
            try:
                status, _, err = proc.finish(30)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)  # faulthandler shows where it hangs
                status, _, err = proc.finish(10)
        assert status == 130, err[-3000:]
        _no_escaped_exception(err)
