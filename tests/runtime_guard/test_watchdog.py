"""Loop-stall watchdog against real loops (asyncio, uvloop, threads, fork). No wall-clock asserts.

Thresholds are 0.5 s and planted blocks 1.2-1.5 s. A loaded machine stops a whole process for
0.1-0.3 s at times (measured here at load 15: a 10 ms asyncio timer ran 0.1 s late about 1-8 times a
minute, 0.325 s at worst); the watchdog rightly reports such a pause of an idle loop as a stall, so
with a 0.1 s threshold a test that counts its planted stalls saw one more (CI-like runs here, and
SIGSTOP freezes of 0.15 s every 0.5 s: 4 of 31 tests failed). A block also has to outlast the
threshold by more than the monitor thread can be kept from running, or it is reported unsampled.
"""
from __future__ import annotations

import asyncio
import json
import textwrap
import threading
import time
from pathlib import Path

import pytest

import runtime_guard
from runtime_guard import watchdog
from rg_testutil import run_code

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _forget_planted_stalls():
    # The stalls planted here are not the test process's own: keep its exit summary quiet.
    yield
    from runtime_guard import watchdog

    watchdog.reset_summary()


def _lineno(marker: str) -> int:
    for i, line in enumerate(Path(__file__).read_text().splitlines(), 1):
        if marker in line and "_lineno(" not in line:
            return i
    raise AssertionError(marker)


def test_planted_block_reported_with_file_line_and_hint() -> None:
    reports: list = []

    async def main() -> None:
        with runtime_guard.watch_loop(threshold=0.5, on_stall=reports.append, hard_threshold=None):
            await asyncio.sleep(0.2)
            time.sleep(1.2)  # PLANTED-BLOCK
            await asyncio.sleep(0.2)

    asyncio.run(main())
    assert len(reports) == 1
    r = reports[0]
    assert r.filename == __file__ and r.lineno == _lineno("# PLANTED-BLOCK")
    assert r.rule == "SHD301" and "asyncio.sleep" in (r.fix or "")
    assert "main" in r.running and r.stack and not r.ongoing
    assert r.duration >= 0.5
    assert "PLANTED-BLOCK" in r.format()


def test_no_report_without_block() -> None:
    reports: list = []

    async def tick() -> None:
        for _ in range(50):
            await asyncio.sleep(0.01)

    async def main() -> None:
        with runtime_guard.watch_loop(threshold=0.5, on_stall=reports.append, hard_threshold=None):
            await asyncio.gather(*(tick() for _ in range(20)))

    asyncio.run(main())
    assert reports == []


def test_blocking_call_in_library_points_at_user_line() -> None:
    reports: list = []

    def slow_json() -> None:
        import json as _json

        _json.dumps([list(range(200))] * 20000)

    async def main() -> None:
        with runtime_guard.watch_loop(threshold=0.5, on_stall=reports.append, hard_threshold=None):
            await asyncio.sleep(0.05)
            t0 = time.monotonic()
            while time.monotonic() - t0 < 1.2:
                slow_json()  # LIB-BLOCK
            await asyncio.sleep(0.1)

    asyncio.run(main())
    assert reports, "stall not reported"
    assert reports[0].filename == __file__


def test_failing_sink_never_propagates() -> None:
    def bad(report: object) -> None:
        raise RuntimeError("sink broke")

    async def main() -> str:
        with runtime_guard.watch_loop(threshold=0.05, on_stall=bad, hard_threshold=None):
            time.sleep(0.3)
            await asyncio.sleep(0.1)
        return "ok"

    assert asyncio.run(main()) == "ok"


def test_loops_starting_at_once_in_many_threads_share_one_monitor() -> None:
    # CI once saw 3 monitor threads: each loop's first watch_loop checked "no monitor yet" before
    # any had started one. A fresh process, 16 loops released together by a barrier and a tiny
    # switch interval make the race likely (8 of 10 runs before the fix started 2-8 monitors).
    code = """
        import asyncio, sys, threading
        sys.setswitchinterval(1e-6)
        import runtime_guard
        bar = threading.Barrier(16)
        def worker():
            async def main():
                bar.wait()
                with runtime_guard.watch_loop(threshold=0.1, on_stall=lambda r: None, hard_threshold=None):
                    await asyncio.sleep(0.05)
            asyncio.run(main())
        ts = [threading.Thread(target=worker) for _ in range(16)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        print("monitors", sum(t.name == "runtime_guard-watchdog" for t in threading.enumerate()))
    """
    for _ in range(3):
        proc = run_code(code)
        assert proc.returncode == 0, proc.stderr
        assert "monitors 1" in proc.stdout, proc.stdout


def test_many_loops_in_threads_one_monitor_and_closed_loops_forgotten() -> None:
    import uvloop

    reports: list = []
    lock = threading.Lock()

    def on_stall(r: object) -> None:
        with lock:
            reports.append(r)

    def worker(i: int, use_uvloop: bool) -> None:
        async def main() -> None:
            with runtime_guard.watch_loop(threshold=0.5, on_stall=on_stall, hard_threshold=None):
                await asyncio.sleep(0.1)
                time.sleep(1.2)  # THREAD-BLOCK
                await asyncio.sleep(0.1)

        loop = uvloop.new_event_loop() if use_uvloop else asyncio.new_event_loop()
        try:
            loop.run_until_complete(main())
        finally:
            loop.close()

    threads = [threading.Thread(target=worker, args=(i, i % 2 == 0)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(reports) == 4
    assert {r.lineno for r in reports} == {_lineno("# THREAD-BLOCK")}
    assert sum(t.name == "runtime_guard-watchdog" for t in threading.enumerate()) == 1
    import gc

    gc.collect()
    watchdog.check_now()
    assert not any(w.loop_ref() is not None and not w.loop_ref().is_closed()  # type: ignore[union-attr]
                   for w in watchdog._monitor.watched.values())


ENV_PROGRAM = """
    import asyncio, time, sys
    {prelude}
    async def main():
        await asyncio.sleep(0.1)
        time.sleep(1.2)  # ENV-BLOCK
        await asyncio.sleep(0.1)
    asyncio.run(main())
    import uvloop
    uvloop.run(main())
    import threading
    def th():
        loop = asyncio.new_event_loop(); loop.run_until_complete(main()); loop.close()
    t = threading.Thread(target=th); t.start(); t.join()
"""


@pytest.mark.parametrize("how", ["env", "auto"])
def test_zero_code_activation_hooks_every_loop(tmp_path: Path, how: str) -> None:
    out = tmp_path / "stalls.jsonl"
    env = {"RUNTIME_GUARD_REPORT_FILE": str(out), "RUNTIME_GUARD_THRESHOLD": "0.5"}
    if how == "env":
        env["RUNTIME_GUARD"] = "1"
        prelude = "import runtime_guard; runtime_guard.install_from_env()"
    else:
        prelude = "import runtime_guard.auto"
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(ENV_PROGRAM.format(prelude=prelude)))
    r = run_code(f"import runpy; runpy.run_path({str(script)!r}, run_name='__main__')", env=env)
    assert r.returncode == 0, r.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    stalls = [x for x in records if x["event"] == "stall"]
    assert len(stalls) == 3, records  # asyncio.run, uvloop.run, loop in a thread
    assert all(x["lineno"] == 6 and x["rule"] == "SHD301" and x["filename"] == str(script) for x in stalls)
    assert {x["thread_name"] for x in stalls} >= {"MainThread"}
    assert "3 event-loop stall(s)" in r.stderr  # exit summary


def test_gil_holding_c_call_dumped_by_faulthandler() -> None:
    # A catastrophic regex holds the GIL: the Python monitor cannot run; faulthandler's C timer can.
    r = run_code("""
        import asyncio, re, runtime_guard, time
        reports = []
        async def main():
            runtime_guard.watch_loop(threshold=0.5, on_stall=reports.append, hard_threshold=0.6)
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            re.match(r'(a+)+$', 'a' * 26 + 'b')  # GIL-BLOCK (26: ~4 s of CPU here, 27 twice that)
            print('regex took', time.monotonic() - t0, flush=True)
            await asyncio.sleep(1.0)  # the monitor reports the stall while the loop is still open
        asyncio.run(main())
        print('REPORTS', len(reports), [r.sampled for r in reports], flush=True)
    """, timeout=120)
    assert r.returncode == 0, r.stderr
    took = float(r.stdout.split("regex took")[1].split()[0])
    if took < 1.5:  # the dump comes at 1 s
        pytest.skip(f"regex too fast on this machine ({took:.2f}s)")
    # 1.25 x 0.6 s, raised to the faulthandler layer's 1 s floor
    assert "Timeout (0:00:01)" in r.stderr and "in main" in r.stderr and 'line 8' in r.stderr
    assert "REPORTS 1" in r.stdout  # reported once the GIL is released


def test_fork_child_watches_its_own_loops() -> None:
    r = run_code("""
        import asyncio, os, time, runtime_guard
        runtime_guard.install_watchdog(0.5, hard_threshold=None, on_stall=lambda r: print('STALL', os.getpid() == PID_CHILD[0], r.lineno, flush=True))
        PID_CHILD = [None]
        async def blocker():
            await asyncio.sleep(0.1)
            time.sleep(1.2)
            await asyncio.sleep(0.1)
        asyncio.run(blocker())
        pid = os.fork()
        if pid == 0:
            PID_CHILD[0] = os.getpid()
            asyncio.run(blocker())
            os._exit(0)
        os.waitpid(pid, 0)
    """)
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stdout.splitlines() if line.startswith("STALL")]
    assert lines == ["STALL False 7", "STALL True 7"], r.stdout


def test_summary_counts_stalls() -> None:
    before = runtime_guard.stall_summary()["count"]

    async def main() -> None:
        with runtime_guard.watch_loop(threshold=0.5, on_stall=lambda r: None, hard_threshold=None):
            time.sleep(1.2)
            await asyncio.sleep(0.1)

    asyncio.run(main())
    # A stall is counted when it ends; the with block may have ended the watch before the monitor
    # saw the loop's first beat after it (it looks every threshold/2): settle() closes it.
    watchdog.settle()
    s = runtime_guard.stall_summary()
    assert s["count"] == before + 1 and s["worst"]


def test_watch_loop_outside_loop_raises_clear_error() -> None:
    with pytest.raises(RuntimeError):
        runtime_guard.watch_loop()


# --- issue 29: the report's grouping, real durations, and a stack without the launcher -----------

GROUPED_PROGRAM = """\
import asyncio, time

async def main():
    for _ in range(3):
        await asyncio.sleep(0.05)
        time.sleep(1.0)  # REPEATED
    await asyncio.sleep(0.05)
    time.sleep(1.5)  # ONCE

asyncio.run(main())
"""


def _launch(tmp_path: Path, program: str, *args: str) -> "tuple[object, list]":
    import subprocess
    import sys

    from rg_testutil import child_env, REPO

    script = tmp_path / "prog.py"
    script.write_text(program)
    out = tmp_path / "stalls.jsonl"
    r = subprocess.run([sys.executable, "-m", "runtime_guard", "--threshold", "0.5", "--json", str(out), *args,
                        str(script)], capture_output=True, text=True, timeout=60, env=child_env(), cwd=str(REPO))
    records = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    return r, records


def test_exit_summary_groups_stalls_by_location_with_counts_and_total(tmp_path: Path) -> None:
    r, records = _launch(tmp_path, GROUPED_PROGRAM)
    assert r.returncode == 0, r.stderr
    script = str(tmp_path / "prog.py")
    summary = r.stderr[r.stderr.index("runtime_guard: 4 event-loop stall(s)"):].splitlines()
    assert "at 2 location(s):" in summary[0], summary
    # one line per location, most total time first: 3 x 1.0 s before 1 x 1.5 s
    assert summary[1].startswith(f"  3 x {script}:6 in main: "), summary
    assert summary[2].startswith(f"  1 x {script}:8 in main: "), summary
    total_repeated = float(summary[1].split(": ")[1].split("s in all")[0])
    assert 3 * 0.98 <= total_repeated <= 3 * 1.7, summary
    ends = [x for x in records if x["event"] == "stall_end"]
    assert [x["lineno"] for x in ends] == [6, 6, 6, 8]
    grand_total = float(summary[0].split(", ")[1].split("s in all")[0])
    assert abs(grand_total - sum(x["duration"] for x in ends)) < 0.01


def test_real_duration_of_a_block_that_ends_the_loop(tmp_path: Path) -> None:
    # The block is the coroutine's last statement: the loop stops before a beat can run. Before,
    # the summary kept the last in-stall sample (0.252 s for a 0.3 s block at threshold 0.1).
    r, records = _launch(tmp_path, "import asyncio, time\n\nasync def main():\n    await asyncio.sleep(0.05)\n"
                                   "    time.sleep(1.5)\n\nasyncio.run(main())\n")
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stderr.splitlines() if x.startswith("  1 x "))
    assert 1.48 <= float(line.split("longest ")[1].split("s")[0]) <= 2.2, r.stderr
    stall, end = records
    assert stall["event"] == "stall" and stall["ongoing"] and stall["duration"] < 1.48  # the detection sample
    assert end["event"] == "stall_end" and end["stall_id"] == stall["stall_id"] and not end["ongoing"]
    assert end["measured_end"] and 1.48 <= end["duration"] <= 2.2, end


@pytest.mark.parametrize("last", [False, True])
def test_real_duration_in_process_report(last: bool) -> None:
    reports: list = []

    async def main() -> None:
        with runtime_guard.watch_loop(threshold=0.5, on_stall=reports.append, hard_threshold=None):
            await asyncio.sleep(0.05)
            time.sleep(1.5)
            if not last:
                await asyncio.sleep(0.1)

    asyncio.run(main())
    watchdog.settle()  # the with block may have ended the watch mid-stall: the monitor closes it
    assert len(reports) == 1 and not reports[0].ongoing and reports[0].measured_end
    assert 1.48 <= reports[0].duration <= 2.2, reports[0].duration


@pytest.mark.parametrize("how", ["script", "module"])
def test_stack_leaves_out_launcher_and_guard_frames(tmp_path: Path, how: str) -> None:
    import subprocess
    import sys

    from rg_testutil import child_env

    pkg = tmp_path / "stallpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import asyncio, time\n\nasync def main():\n    await asyncio.sleep(0.05)\n"
                                     "    time.sleep(1.2)\n    await asyncio.sleep(0.05)\n\nasyncio.run(main())\n")
    out = tmp_path / "stalls.jsonl"
    target = [str(pkg / "__main__.py")] if how == "script" else ["-m", "stallpkg"]
    r = subprocess.run([sys.executable, "-m", "runtime_guard", "--json", str(out), *target], capture_output=True,
                       text=True, timeout=60, env=child_env({"RUNTIME_GUARD_THRESHOLD": "0.5"}), cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    stall = json.loads(out.read_text().splitlines()[0])
    stack = stall["stack"]
    guard_dir = str(Path(watchdog.__file__).parent)
    assert stack[0].startswith(str(pkg / "__main__.py") + ":8 in <module>"), stack  # asyncio.run(main())
    assert stack[-1].startswith(str(pkg / "__main__.py") + ":5 in main"), stack
    assert not [s for s in stack if "runpy" in s.split(" in ")[0] or s.startswith(guard_dir)], stack
    assert "runpy" not in r.stderr and guard_dir not in r.stderr.replace("runtime_guard:", "")


def test_fork_child_does_not_inherit_the_parents_summary() -> None:
    r = run_code("""
        import asyncio, os, time, runtime_guard
        from runtime_guard import watchdog
        runtime_guard.install_watchdog(0.5, hard_threshold=None, on_stall=lambda r: None)
        async def blocker():
            await asyncio.sleep(0.05)
            time.sleep(1.2)
            await asyncio.sleep(0.05)
        asyncio.run(blocker())
        watchdog.settle()
        pid = os.fork()
        if pid == 0:
            print('CHILD', watchdog.summary()['count'], flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        print('PARENT', watchdog.summary()['count'], flush=True)
    """)
    assert r.returncode == 0, r.stderr
    assert "CHILD 0" in r.stdout and "PARENT 1" in r.stdout, r.stdout
