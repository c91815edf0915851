"""SHD101 for real: `asyncio.gather` / tqdm's gather orphan the siblings of a failed or
cancelled child, and their sandbox teardown never runs when the process then ends
without unwinding the loop. The TaskGroup rewrite produced by the autofix cleans up.

Each "sandbox" child creates a marker file and removes it in `finally` after an async
teardown (`await asyncio.sleep(0.2)`, like deleting a cloud sandbox). A marker left on
disk after the process ended is a leaked sandbox.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
SETTINGS = Settings(selected=("SHD101",), target_version="py311")
N = 8

SANDBOX = '''
import asyncio
import os
import sys

MARKERS = sys.argv[1]


async def run_sandbox(i, fail_after=None):
    path = os.path.join(MARKERS, f"sandbox{i}")
    open(path, "w").close()
    try:
        await asyncio.sleep(fail_after if fail_after is not None else 60)
        if fail_after is not None:
            raise RuntimeError(f"trial {i} failed: tokenizer error")
        return i
    finally:
        await asyncio.sleep(0.2)  # async teardown: delete the sandbox
        os.remove(path)
'''

# One child fails; the driver logs the error and ends the process at once (SkyRL #1691's
# remedy for a dead engine was `os._exit(1)`; a Ray worker killed by its driver ends the same
# way): nothing unwinds the loop after the gather returned the error.
CHILD_FAILS = SANDBOX + '''

async def generate(n):
    results = await asyncio.gather(*[run_sandbox(i, 0.3 if i == 0 else None) for i in range(n)])
    return results


async def main():
    try:
        await generate(%d)
    except Exception as exc:
        print(f"generation failed: {exc!r}", file=sys.stderr, flush=True)
        os._exit(1)


asyncio.run(main())
''' % N

# tqdm's gather, and the caller is cancelled (here by a step timeout; Ctrl+C or ray.cancel
# cancel it the same way). The program then closes its own loop, as programs that drive
# `run_until_complete` do: tasks still pending are never resumed.
TQDM_CANCELLED = SANDBOX + '''
from tqdm.asyncio import tqdm


async def generate(n):
    return await tqdm.gather(*[run_sandbox(i) for i in range(n)], desc="rollouts")


async def main():
    try:
        await asyncio.wait_for(generate(%d), timeout=1.0)
    except asyncio.TimeoutError:
        live = len(os.listdir(MARKERS))
        print(f"rollout step timed out; sandboxes still running: {live}", file=sys.stderr, flush=True)


loop = asyncio.new_event_loop()
try:
    loop.run_until_complete(main())
finally:
    loop.close()
''' % N

# Control: the same tqdm program under asyncio.run, whose shutdown cancels leftover tasks
# and runs them to completion, so the orphans' finally blocks do run at exit.
TQDM_ASYNCIO_RUN = TQDM_CANCELLED.replace(
    "loop = asyncio.new_event_loop()\ntry:\n    loop.run_until_complete(main())\nfinally:\n    loop.close()\n",
    "asyncio.run(main())\n",
)


# Ctrl+C (or ray.cancel, which interrupts a Ray task's main thread the same way) under
# asyncio.run: the gather cancels every child, but it is done - and so is the main task - as
# soon as the *first* child has finished its teardown. asyncio.run then cancels what is left, a
# second time, while those children await their own teardown: it is cut short. Here teardown
# times differ per sandbox, as deleting real sandboxes does; with equal times the loss depends
# on how the timers fall into loop iterations (measured: 1 to 3 of 5 lost in ~1 run of 20). The
# first teardown ends 0.5 s before the next: a loaded machine that stops the process across both
# ends lets both finish in one loop pass (0.1 s apart, a 0.3 s SIGSTOP 0.05 s after the SIGINT
# left 5 sandboxes, not 7, in 5 of 5 runs).
INTERRUPTED = '''
import asyncio
import os
import sys

MARKERS = sys.argv[1]


async def run_sandbox(i):
    path = os.path.join(MARKERS, f"sandbox{i}")
    open(path, "w").close()
    try:
        while True:  # short sleeps: asyncio.run's SIGINT handler sets no wakeup fd (one long timer would hold it)
            await asyncio.sleep(0.05)
    finally:
        await asyncio.sleep(0.1 if i == 0 else 0.6 + 0.1 * i)  # deleting sandbox i takes its own time
        os.remove(path)


async def generate(n):
    results = await asyncio.gather(*[run_sandbox(i) for i in range(n)])
    return results


asyncio.run(generate(%d))
''' % N


def _written(program: str, tmp_path: Path, name: str) -> tuple[Path, Path]:
    """``program`` written to ``<name>.py``, and the empty folder its sandboxes mark."""
    script = tmp_path / f"{name}.py"
    script.write_text(program)
    markers = tmp_path / f"{name}_markers"
    markers.mkdir()
    return script, markers

def _interrupted(program: str, tmp_path: Path, name: str) -> tuple[int, int]:
    """Run ``program``, send it SIGINT once every sandbox is up; (exit status, sandboxes left)."""
    script, markers = _written(program, tmp_path, name)
    proc = subprocess.Popen([sys.executable, str(script), str(markers)], cwd=REPO,
                            env=dict(os.environ, PYTHONPATH=str(REPO)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        end = time.monotonic() + 30
        while len(os.listdir(markers)) < N and time.monotonic() < end and proc.poll() is None:
            time.sleep(0.05)
        assert len(os.listdir(markers)) == N
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, len(os.listdir(markers))


def _run(program: str, tmp_path: Path, name: str) -> tuple[subprocess.CompletedProcess, int]:
    script, markers = _written(program, tmp_path, name)
    env = dict(os.environ, PYTHONPATH=str(REPO), TQDM_DISABLE="1")
    proc = subprocess.run(
        [sys.executable, str(script), str(markers)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=60,
    )
    return proc, len(os.listdir(markers))


def _codes(program: str) -> list[str]:
    result = lint_source(program.encode(), "program.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _fixed(program: str) -> str:
    assert "SHD101" in _codes(program)
    fixed = fix_source(program.encode(), "program.py", SETTINGS, unsafe=True).source.decode()
    assert "TaskGroup()" in fixed
    assert "SHD101" not in _codes(fixed)
    return fixed


@pytest.mark.timeout(120)
def test_gather_orphans_siblings_when_one_child_fails(tmp_path):
    proc, leaked = _run(CHILD_FAILS, tmp_path, "hazard")
    assert proc.returncode == 1, proc.stderr
    assert "tokenizer error" in proc.stderr
    # every sibling of the failed child was still running when the process ended
    assert leaked == N - 1, (leaked, proc.stderr)

    fixed = _fixed(CHILD_FAILS)
    proc, leaked = _run(fixed, tmp_path, "fixed")
    assert proc.returncode == 1, proc.stderr
    assert "tokenizer error" in proc.stderr  # the error still surfaces (inside an ExceptionGroup)
    assert leaked == 0, (leaked, proc.stderr)


@pytest.mark.timeout(120)
def test_tqdm_gather_does_not_cancel_children_when_caller_is_cancelled(tmp_path):
    proc, leaked = _run(TQDM_CANCELLED, tmp_path, "hazard")
    assert proc.returncode == 0, proc.stderr
    # the caller was cancelled, but every child kept running: tqdm's gather did not cancel them
    assert f"sandboxes still running: {N}" in proc.stderr, proc.stderr
    assert leaked == N, (leaked, proc.stderr)

    fixed = _fixed(TQDM_CANCELLED)
    assert "add_done_callback" in fixed  # the progress bar is kept
    proc, leaked = _run(fixed, tmp_path, "fixed")
    assert proc.returncode == 0, proc.stderr
    assert "sandboxes still running: 0" in proc.stderr, proc.stderr
    assert leaked == 0, (leaked, proc.stderr)


@pytest.mark.timeout(120)
def test_interrupted_gather_cuts_the_siblings_teardown_short(tmp_path):
    status, leaked = _interrupted(INTERRUPTED, tmp_path, "hazard")
    assert status == -signal.SIGINT  # KeyboardInterrupt ended it, as Ctrl+C should
    # only the first sandbox to finish its teardown was deleted
    assert leaked == N - 1, leaked

    status, leaked = _interrupted(_fixed(INTERRUPTED), tmp_path, "fixed")
    assert status == -signal.SIGINT
    assert leaked == 0, leaked  # the TaskGroup waited for every teardown


@pytest.mark.timeout(120)
def test_asyncio_run_shutdown_reaps_orphans(tmp_path):
    # What the leak needs: an exit that does not unwind the loop. asyncio.run cancels the
    # leftover tasks at shutdown, so the orphans do clean up there - late, but they do.
    proc, leaked = _run(TQDM_ASYNCIO_RUN, tmp_path, "control")
    assert proc.returncode == 0, proc.stderr
    assert f"sandboxes still running: {N}" in proc.stderr, proc.stderr
    assert leaked == 0, (leaked, proc.stderr)


def test_fix_output_keeps_comments_and_is_stable():
    src = textwrap.dedent('''
        import asyncio
        from tqdm.asyncio import tqdm_asyncio


        async def run_trial(t):
            try:
                await t.run()
            finally:
                await t.close()


        async def generate(trials):
            # collect trajectories
            trajectories = await tqdm_asyncio.gather(
                *[run_trial(t) for t in trials],  # one per trial
                total=len(trials),
                desc="trials",
            )  # in order
            return trajectories
    ''')
    out = fix_source(src.encode(), "g.py", SETTINGS, unsafe=True)
    fixed = out.source.decode()
    assert out.applied == 1
    compile(fixed, "g.py", "exec")
    assert "# collect trajectories" in fixed and "# one per trial" in fixed and "# in order" in fixed
    assert "with tqdm_asyncio(total=len(trials), desc=\"trials\") as pbar:" in fixed
    assert "pbar.reset" not in fixed  # total given: no reset needed
    assert "trajectories = [t.result() for t in tasks]  # in order" in fixed
    again = fix_source(out.source, "g.py", SETTINGS, unsafe=True)
    assert again.source == out.source and again.applied == 0



# The three statement shapes (expression, assignment, return) with a list of calls and a
# starred comprehension; the caller, in another function, catches the child's exception type.
SHAPES = '''
import asyncio
import sys


async def child(i, fail):
    try:
        await asyncio.sleep(0.01 * (i + 1))
        if fail and i == 0:
            raise RuntimeError("child 0 failed")
        return i * 10
    finally:
        await asyncio.sleep(0.01)  # async teardown


async def as_statement(fail):
    await asyncio.gather(child(0, fail), child(1, fail))
    return "done"


async def as_assignment(fail):
    got = await asyncio.gather(*[child(i, fail) for i in range(3)])
    return got


async def as_return(fail):
    return await asyncio.gather(child(0, fail), child(1, fail), child(2, fail))


async def main():
    fail = sys.argv[1] == "fail"
    for shape in (as_statement, as_assignment, as_return):
        try:
            got = await shape(fail)
            print(shape.__name__, type(got).__name__, got, flush=True)
        except RuntimeError as exc:  # the caller's handler for the child's error
            print(shape.__name__, "caught RuntimeError:", exc, flush=True)
        except BaseException as exc:
            print(shape.__name__, "escaped as", type(exc).__name__, flush=True)


asyncio.run(main())
'''


@pytest.mark.timeout(120)
def test_normal_path_same_values_and_the_failure_path_changes_the_callers_exception(tmp_path):
    """Why SHD101's fix is unsafe (docs/fix-safety.md): with no failure every shape returns the
    same values (a list stays a list); when a child fails, the caller's `except RuntimeError`
    no longer catches it (an ExceptionGroup arrives)."""
    found = lint_source(SHAPES.encode(), "program.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD101"] * 3
    assert {d.fix["applicability"] for d in found} == {"unsafe"}
    assert fix_source(SHAPES.encode(), "program.py", SETTINGS).source == SHAPES.encode()  # no safe fix
    fixed = fix_source(SHAPES.encode(), "program.py", SETTINGS, unsafe=True).source.decode()
    assert fixed.count("TaskGroup()") == 3 and fixed.count(".result() for t in") == 2
    outs = {}
    for name, text in (("original", SHAPES), ("fixed", fixed)):
        script = tmp_path / f"{name}.py"
        script.write_text(text)
        for mode in ("ok", "fail"):
            done = subprocess.run([sys.executable, str(script), mode], cwd=REPO, capture_output=True, text=True,
                                  timeout=60)
            outs[name, mode] = (done.returncode, done.stdout)
    assert outs["original", "ok"] == outs["fixed", "ok"] == (
        0, "as_statement str done\nas_assignment list [0, 10, 20]\nas_return list [0, 10, 20]\n")
    assert outs["original", "fail"] == (0, "".join(
        f"{s} caught RuntimeError: child 0 failed\n" for s in ("as_statement", "as_assignment", "as_return")))
    assert outs["fixed", "fail"] == (0, "".join(
        f"{s} escaped as ExceptionGroup\n" for s in ("as_statement", "as_assignment", "as_return")))
