"""The exit report (runtime_guard.exit_report), in real subprocesses.

Each program runs under each ending (return, exception, SIGINT, SIGTERM), with the report and
without it, all variants of one program at once: the report must name every leftover with the line
that made it, a clean program must print nothing, and the exit status must be the same with and
without the report.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from rg_testutil import REPO, child_env, wait_for_line

pytestmark = pytest.mark.timeout(240)

ENDINGS = ("return", "exception", "SIGINT", "SIGTERM")
STATUS = {"return": 0, "exception": 1, "SIGINT": -signal.SIGINT, "SIGTERM": -signal.SIGTERM}

# The signal endings wait in 0.05 s slices, not in one time.sleep(120): CPython runs a Python handler
# (the report's SIGTERM handler, SIGINT's KeyboardInterrupt) between bytecodes only, so a signal that
# lands after the last check and before the sleep's clock_nanosleep waits for the sleep to end (see
# docs/runtime_guard.md, exit report). The report is what these tests are about, not that wait.
ENDING_CODE = """
ending = sys.argv[1]
if ending == "exception":
    raise RuntimeError("boom")
if ending in ("SIGINT", "SIGTERM"):
    for _ in range(2400):
        time.sleep(0.05)
"""

LEAKY = """
import asyncio, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

started = threading.Event()

def run_loop():
    loop = asyncio.new_event_loop()
    async def forever():
        started.set()
        await asyncio.sleep(3600)
    loop.call_soon(lambda: loop.create_task(forever()))  # MARK task
    loop.run_forever()

threading.Thread(target=run_loop, name="loop-thread", daemon=True).start()  # MARK loopthread
threading.Thread(target=time.sleep, args=(3600,), name="sleeper", daemon=True).start()  # MARK thread
child = subprocess.Popen(["sleep", "120"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # MARK child
pool = ThreadPoolExecutor(1)  # MARK executor
pool.submit(int).result()
started.wait(30)
print("ready", child.pid, flush=True)
""" + ENDING_CODE

CLEAN = """
import asyncio, os, signal, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor

async def main():
    task = asyncio.create_task(asyncio.sleep(0.01))
    await task
asyncio.run(main())
worker = threading.Thread(target=time.sleep, args=(0.01,))
worker.start()
worker.join()
subprocess.run(["true"], check=True)
with ThreadPoolExecutor(1) as pool:
    pool.submit(int).result()
ready_r, ready_w = os.pipe()
pid = os.fork()
if pid == 0:  # a forked child: SIGTERM's default action again, and no report of its own
    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    os.write(ready_w, b"x")  # after fork's hooks: a SIGTERM before them would be dropped with the handler
    time.sleep(60)
    os._exit(0)
os.read(ready_r, 1)
os.kill(pid, signal.SIGTERM)
_, status = os.waitpid(pid, 0)
print("ready", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL,
      os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM, flush=True)
""" + ENDING_CODE

TORCH = """
import os, sys, time
import torch.distributed as dist

dist.init_process_group("gloo", init_method="file://" + sys.argv[2], rank=0, world_size=1)  # MARK pg
print("ready", flush=True)
""" + ENDING_CODE


def _marks(source: str) -> Dict[str, int]:
    return {line.split("# MARK ")[1].strip(): n for n, line in enumerate(source.splitlines(), 1) if "# MARK " in line}


class Run:
    def __init__(self, proc: subprocess.Popen, ending: str, report: Optional[Path]) -> None:
        self.proc, self.ending, self.report = proc, ending, report
        self.ready: List[str] = []
        self.stdout = self.stderr = ""

    def json(self) -> dict:
        assert self.report is not None and self.report.exists(), self.stderr
        return json.loads(self.report.read_text())


def _wait_ready(run: Run, children: List[int]) -> None:
    """The run's "ready" line (a liveness bound of 120 s); on failure, the program's stderr says why."""
    try:
        run.ready = wait_for_line(run.proc, "ready", timeout=120)
    except AssertionError as e:
        if run.proc.poll() is None:
            run.proc.kill()
        _, err = run.proc.communicate(timeout=30)
        raise AssertionError(f"{run.ending} (report: {run.report is not None}, status "
                             f"{run.proc.returncode}): {e}\nstderr:\n{err[-6000:]}") from None
    words = run.ready[-1].split()
    if len(words) > 1 and words[1].isdigit():
        children.append(int(words[1]))


def _run_all(tmp_path: Path, source: str, *, name: str, extra_args: Tuple[str, ...] = (),
             with_report: bool = True, without: bool = True, env: Optional[dict] = None,
             endings: Tuple[str, ...] = ENDINGS, plain_endings: Optional[Tuple[str, ...]] = None,
             one_at_a_time: bool = False) -> "tuple[Dict, Dict]":
    """Every ending, with the launcher's --exit-report and plain, all at once (``one_at_a_time``: each
    started once the one before said it is ready, for programs whose start-up is heavy, such as a
    local Ray cluster each). Returns the runs by ending."""
    prog = tmp_path / f"{name}.py"
    prog.write_text(textwrap.dedent(source))
    runs: Dict[Tuple[bool, str], Run] = {}
    children: List[int] = []
    try:
        for reporting in ((True,) if with_report else ()) + ((False,) if without else ()):
            for ending in (endings if reporting else (plain_endings or endings)):
                report = tmp_path / f"{name}-{ending}.json" if reporting else None
                launcher = ["-m", "runtime_guard", "--exit-report", "--json", str(report)] if reporting else []
                args = [str(a).replace("{tmp}", str(tmp_path / f"{name}-{ending}-{reporting}"))
                        for a in extra_args]
                proc = subprocess.Popen([sys.executable, *launcher, str(prog), ending, *args], cwd=str(tmp_path),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=child_env(env))
                runs[(reporting, ending)] = run = Run(proc, ending, report)
                if one_at_a_time:
                    _wait_ready(run, children)
        for run in runs.values():
            if not run.ready:
                _wait_ready(run, children)
        # no pause needed before the signals: the programs wait in short slices (ENDING_CODE)
        for run in runs.values():
            if run.ending in ("SIGINT", "SIGTERM"):
                run.proc.send_signal(getattr(signal, run.ending))
        for run in runs.values():
            out, err = run.proc.communicate(timeout=60)
            run.stdout, run.stderr = "".join(run.ready) + out, err
    finally:
        for run in runs.values():
            if run.proc.poll() is None:
                run.proc.kill()
                run.proc.wait()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    return ({e: runs[(True, e)] for e in endings} if with_report else {},
            {e: runs[(False, e)] for e in (plain_endings or endings)} if without else {})


def _one(items: List[dict], **match: object) -> dict:
    found = [i for i in items if all((i.get(k) if k in i else i["detail"].get(k)) == v for k, v in match.items())]
    assert len(found) == 1, (match, items)
    return found[0]


def test_every_leftover_named_with_its_line_under_every_ending(tmp_path: Path) -> None:
    reported, plain = _run_all(tmp_path, LEAKY, name="leaky")
    marks = _marks(LEAKY)
    prog = str(tmp_path / "leaky.py")
    for ending in ENDINGS:
        run = reported[ending]
        assert run.proc.returncode == plain[ending].proc.returncode == STATUS[ending], (ending, run.stderr)
        data = run.json()
        assert data["ending"]["kind"] == ending, data["ending"]
        items = data["items"]
        child_pid = int(run.ready[-1].split()[1])
        expected = [
            (dict(kind="task", name="Task-1"), "task", ["SHD102", "SHD106"]),
            (dict(kind="thread", name="loop-thread"), "loopthread", ["SHD407"]),
            (dict(kind="thread", name="sleeper"), "thread", []),
            (dict(kind="child", pid=child_pid), "child", ["SHD602"]),
            (dict(kind="executor"), "executor", ["SHD503"]),
        ]
        for match, mark, rules in expected:
            item = _one(items, **match)
            assert (item["file"], item["line"], item["rules"]) == (prog, marks[mark], rules), (ending, item)
            assert f"{prog}:{marks[mark]}" in run.stderr, (ending, mark, run.stderr)
        assert _one(items, kind="task")["detail"]["thread"] == "loop-thread"
        assert _one(items, kind="thread", name="loop-thread")["detail"]["runs_event_loop"] is True
        assert "sleep 120" in _one(items, kind="child")["detail"]["cmdline"]
        assert len(items) == 5, items  # nothing else: the executor's worker is its executor's
        assert f"ended by {ending}" in run.stderr


def test_clean_program_reports_nothing_and_keeps_its_status(tmp_path: Path) -> None:
    reported, plain = _run_all(tmp_path, CLEAN, name="clean")
    for ending in ENDINGS:
        run = reported[ending]
        assert run.proc.returncode == plain[ending].proc.returncode == STATUS[ending], (ending, run.stderr)
        assert run.json()["items"] == [], run.json()
        assert "exit report" not in run.stderr, run.stderr
        if ending in ("return", "SIGTERM"):
            assert run.stderr == plain[ending].stderr == "", (ending, run.stderr)
        # the program sees SIGTERM's default action; a forked child dies of SIGTERM, reporting nothing
        assert run.ready[-1].split()[1:] == ["True", "True"], run.ready


def test_torch_process_group_never_destroyed(tmp_path: Path) -> None:
    pytest.importorskip("torch.distributed")
    reported, plain = _run_all(tmp_path, TORCH, name="pg", extra_args=("{tmp}",), plain_endings=("SIGINT", "SIGTERM"))
    line = _marks(TORCH)["pg"]
    for ending in ENDINGS:
        run = reported[ending]
        assert run.proc.returncode == STATUS[ending], (ending, run.stderr)
        if ending in plain:  # the signal endings, run without the report too (return/exception: above)
            assert plain[ending].proc.returncode == run.proc.returncode, (ending, plain[ending].stderr)
        item = _one(run.json()["items"], kind="process-group")
        assert (item["file"], item["line"], item["rules"]) == (str(tmp_path / "pg.py"), line, ["SHD502"]), item
        assert item["detail"]["backend"] == "gloo"
        assert f"pg.py:{line}" in run.stderr


RAY = """
import sys, time
import ray

ray.init(num_cpus=1, include_dashboard=False)

@ray.remote
class Worker:
    def work(self):
        time.sleep(3600)

worker = Worker.remote()
ref = worker.work.remote()  # MARK ray
time.sleep(1)
print("ready", flush=True)
""" + ENDING_CODE


def test_ray_actor_work_still_running(tmp_path: Path) -> None:
    """A local Ray cluster per run; SIGTERM is left out (no call into Ray from a signal handler, and a
    driver killed by SIGTERM leaves its cluster to Ray's own clean-up)."""
    pytest.importorskip("ray")
    endings = ("return", "exception", "SIGINT")
    # one at a time: four local clusters starting together on two loaded cores can exceed Ray's own fixed
    # 30 s wait for a raylet to register (ray/_private/node.py), which ends a driver before "ready"
    reported, plain = _run_all(tmp_path, RAY, name="rayprog", endings=endings, plain_endings=("SIGINT",),
                               one_at_a_time=True)
    line = _marks(RAY)["ray"]
    # a Ray driver ends with status 1 on an uncaught KeyboardInterrupt, with or without the report
    assert reported["SIGINT"].proc.returncode == plain["SIGINT"].proc.returncode == 1, plain["SIGINT"].stderr
    for ending in endings:
        run = reported[ending]
        assert run.proc.returncode == {**STATUS, "SIGINT": 1}[ending], (ending, run.stderr)
        item = _one(run.json()["items"], kind="ray")
        assert (item["file"], item["line"], item["rules"]) == (str(tmp_path / "rayprog.py"), line,
                                                                ["SHD403", "SHD501"]), item
        assert f"rayprog.py:{line}" in run.stderr


def test_autoload_env_variable_reports_on_sigterm(tmp_path: Path) -> None:
    pth = REPO / "runtime_guard" / "data" / "runtime_guard-autoload.pth"
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    (site_dir / pth.name).write_text(pth.read_text())
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(LEAKY))
    report = tmp_path / "r.json"
    boot = (f"import site; site.addsitedir({str(site_dir)!r}); import runpy, sys; sys.argv[1:] = ['SIGTERM']; "
            f"runpy.run_path({str(prog)!r}, run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", boot], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=str(tmp_path), env=child_env({"RUNTIME_GUARD_EXIT_REPORT": "1",
                                                             "RUNTIME_GUARD_EXIT_REPORT_FILE": str(report)}))
    child = None
    try:
        ready = wait_for_line(proc, "ready", timeout=60)
        child = int(ready[-1].split()[1])
        proc.send_signal(signal.SIGTERM)  # the program waits in short slices (ENDING_CODE)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if child:
            try:
                os.kill(child, signal.SIGKILL)
            except OSError:
                pass
    assert proc.returncode == -signal.SIGTERM, err
    items = json.loads(report.read_text())["items"]
    assert _one(items, kind="thread", name="sleeper")["line"] == _marks(LEAKY)["thread"]
    assert _one(items, kind="child", pid=child)["line"] == _marks(LEAKY)["child"]


def test_pytest_option_reports_what_a_session_left(tmp_path: Path) -> None:
    test_file = tmp_path / "test_leaves_a_thread.py"
    test_file.write_text(textwrap.dedent("""
        import threading, time

        def test_starts_a_thread():
            threading.Thread(target=time.sleep, args=(3600,), name="left", daemon=True).start()  # MARK
    """))
    report = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--exit-report",
                        "--exit-report-json", str(report), str(test_file)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=child_env(), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    item = _one(json.loads(report.read_text())["items"], kind="thread", name="left")
    assert (item["file"], item["line"]) == (str(test_file), 5), item
    assert f"{test_file}:5" in r.stderr


def test_launcher_module_form_and_usage_errors(tmp_path: Path) -> None:
    (tmp_path / "leaver.py").write_text(textwrap.dedent("""
        import threading, time
        threading.Thread(target=time.sleep, args=(3600,), name="left", daemon=True).start()  # line 3
    """))
    report = tmp_path / "r.json"
    r = subprocess.run([sys.executable, "-m", "runtime_guard", "--exit-report", "--json", str(report), "-m", "leaver"],
                       capture_output=True, text=True, cwd=str(tmp_path), env=child_env(), timeout=60)
    assert r.returncode == 0, r.stderr
    item = _one(json.loads(report.read_text())["items"], kind="thread", name="left")
    assert (Path(item["file"]).name, item["line"]) == ("leaver.py", 3), item
    bad = subprocess.run([sys.executable, "-m", "runtime_guard", "--exit-report", "--threshold", "1", "leaver.py"],
                         capture_output=True, text=True, cwd=str(tmp_path), env=child_env(), timeout=60)
    assert bad.returncode == 2 and "drop --threshold" in bad.stderr, bad.stderr
