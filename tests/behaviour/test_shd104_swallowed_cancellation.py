"""SHD104 for real: a coroutine that swallows CancelledError.

Hazard 1: `asyncio.wait_for` times out, cancels the lease holder, which swallows the
cancel and returns normally: no TimeoutError, the caller's lease bookkeeping is skipped.
Hazard 2: a TaskGroup sibling fails, the group cancels the heartbeat, which swallows it
and keeps looping: `asyncio.run` never returns (the process hangs).
Fixed (the exact autofix output, unsafe): TimeoutError raised and the lease released;
the TaskGroup error surfaces and the process exits.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild

SETTINGS = Settings(selected=("SHD104",), target_version="py311")
HANG_S = 3.0
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LEASE = textwrap.dedent('''
    import asyncio

    LEASES = set()

    async def hold_lease(name):
        LEASES.add(name)
        try:
            await asyncio.sleep(3600)  # renew until done
            return "finished"
        except asyncio.CancelledError:
            print("lease holder cancelled", flush=True)

    async def main():
        try:
            result = await asyncio.wait_for(hold_lease("gpu-0"), timeout=0.3)
            print("RESULT", result, flush=True)
        except TimeoutError:
            LEASES.discard("gpu-0")  # release on timeout
            print("TIMEOUT", flush=True)
        print("LEASES", sorted(LEASES), flush=True)

    asyncio.run(main())
''')

TASKGROUP = textwrap.dedent('''
    import asyncio

    async def heartbeat():
        while True:
            try:
                await asyncio.sleep(0.05)
            except:  # never let the heartbeat die
                pass

    async def trajectory():
        await asyncio.sleep(0.2)
        raise RuntimeError("trajectory failed")

    async def main():
        async with asyncio.TaskGroup() as tg:
            tg.create_task(heartbeat())
            tg.create_task(trajectory())

    print("ready", flush=True)
    asyncio.run(main())
''')


def _run(src, tmp_path, name, timeout):
    path = tmp_path / name
    path.write_bytes(src)
    try:
        p = subprocess.run([sys.executable, str(path)], cwd=REPO, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:  # subprocess.run kills the child
        return None, (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or ""), ""


def _run_until_line(src, tmp_path, name, lines, bound):
    """Run the program until it prints a line starting with one of ``lines`` (or ends, or ``bound``
    s pass); then kill it. Returns (returncode or None if it was still running, stdout so far)."""
    path = tmp_path / name
    path.write_bytes(src)
    out = []
    end = time.monotonic() + bound
    with PipedChild([sys.executable, path], cwd=REPO, stderr=subprocess.DEVNULL) as p:
        try:
            while line := p.readline(timeout=end - time.monotonic()):
                out.append(line)
                if line.startswith(tuple(lines)):
                    break
        except subprocess.TimeoutExpired:
            pass  # ``bound`` s passed: killed on the way out
        return p.poll(), "".join(out)


def _fixed(src: str) -> bytes:
    fixed = fix_source(src.encode(), "fixed.py", SETTINGS, unsafe=True).source
    assert lint_source(fixed, "fixed.py", SETTINGS).diagnostics == []
    return fixed


@pytest.mark.timeout(60)
def test_timeout_ignored_and_lease_kept_before_fix(tmp_path):
    assert [d.code for d in lint_source(LEASE.encode(), "hazard.py", SETTINGS).diagnostics] == ["SHD104"]
    rc, out, _ = _run(LEASE.encode(), tmp_path, "hazard.py", 30)
    assert rc == 0
    assert "RESULT None" in out  # the timeout was silently ignored
    assert "LEASES ['gpu-0']" in out  # and the lease leaked

    rc, out, _ = _run(_fixed(LEASE), tmp_path, "fixed.py", 30)
    assert rc == 0
    assert "TIMEOUT" in out and "LEASES []" in out

    # with a `return "finished"` after the try, `raise` would skip it: not exact, no fix
    after = LEASE.replace('        return "finished"\n', "").replace(
        '        print("lease holder cancelled", flush=True)\n',
        '        print("lease holder cancelled", flush=True)\n    return "finished"\n')
    assert 'flush=True)\n    return "finished"' in after
    found = lint_source(after.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and found[0].fix is None


@pytest.mark.timeout(60)
def test_taskgroup_shutdown_hangs_before_fix(tmp_path):
    assert [d.code for d in lint_source(TASKGROUP.encode(), "hazard.py", SETTINGS).diagnostics] == ["SHD104"]
    # HANG_S after "ready" (the trajectory fails 0.2 s into the loop; the fixed program below has
    # exited 0.25 s after "ready", measured) the hazard is still running: the group waits forever
    # for the heartbeat. 3 s is 12 times what the fixed program needs.
    path = tmp_path / "hazard.py"
    path.write_bytes(TASKGROUP.encode())
    with PipedChild([sys.executable, path], cwd=REPO, stderr=subprocess.DEVNULL) as p:
        assert p.readline() == "ready\n"
        with pytest.raises(subprocess.TimeoutExpired):
            p.finish(HANG_S)

    fixed = _fixed(TASKGROUP)
    assert b"if asyncio.current_task().cancelling():" in fixed
    rc, out, err = _run(fixed, tmp_path, "fixed.py", 30)
    assert rc == 1
    assert "trajectory failed" in err  # the real error surfaces


# Hazard 3 (exit paths): cancel-then-await with `except BaseException: pass`. The supervisor
# restarts its poller; when the supervisor itself is cancelled while it awaits the old poller,
# the broad handler swallows that cancellation too and the supervisor loops on.
SUPERVISOR = textwrap.dedent('''
    import asyncio

    async def poll():
        try:
            await asyncio.sleep(3600)
        finally:
            await asyncio.sleep(0.5)  # closing the connection takes a while

    async def supervisor():
        poller = asyncio.create_task(poll())
        while True:
            await asyncio.sleep(0.01)
            poller.cancel()
            try:
                await poller
            except BaseException:
                pass
            poller = asyncio.create_task(poll())

    async def main():
        task = asyncio.create_task(supervisor())
        await asyncio.sleep(0.3)  # the supervisor is now awaiting its old poller
        task.cancel()
        await asyncio.wait({task}, timeout=3)
        print("RUNNING" if not task.done() else "STOPPED", flush=True)
        task.cancel()
        await asyncio.wait({task}, timeout=3)

    asyncio.run(main())
''')

# Hazard 4 (exit paths): the handler's `raise` is swallowed by a `return` in its nested finally.
FINALLY_RETURN = textwrap.dedent('''
    import asyncio

    async def trial():
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            try:
                print("trial cancelled", flush=True)
                raise
            finally:
                return "partial"

    async def main():
        try:
            print("RESULT", await asyncio.wait_for(trial(), timeout=0.3), flush=True)
        except TimeoutError:
            print("TIMEOUT", flush=True)

    asyncio.run(main())
''')


@pytest.mark.timeout(60)
def test_broad_handler_around_cancelled_task_keeps_the_canceller_running(tmp_path):
    found = lint_source(SUPERVISOR.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and "KeyboardInterrupt" in found[0].message
    # The program itself decides (asyncio.wait(timeout=3) after cancel()) and prints RUNNING or
    # STOPPED; after RUNNING the hazard never ends, so it is killed once that line is read.
    rc, out = _run_until_line(SUPERVISOR.encode(), tmp_path, "hazard.py", ("RUNNING", "STOPPED"), 30)
    assert "RUNNING" in out  # 3 s after cancel() the supervisor is still looping

    fixed = _fixed(SUPERVISOR)
    assert b"except (asyncio.CancelledError, Exception):" in fixed and b"cancelling()" in fixed
    rc, out, _ = _run(fixed, tmp_path, "fixed.py", 30)
    assert rc == 0 and "STOPPED" in out


@pytest.mark.timeout(60)
def test_return_in_finally_swallows_the_reraise(tmp_path):
    found = lint_source(FINALLY_RETURN.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and found[0].fix is None
    rc, out, _ = _run(FINALLY_RETURN.encode(), tmp_path, "hazard.py", 30)
    assert "trial cancelled" in out
    assert "RESULT partial" in out and "TIMEOUT" not in out  # the timeout was lost


# ---------------------------------------------------------------------------------------------
# Every fix shape, run (issue 26): the same harness runs ``target`` once without cancellation
# (the normal path: its output and return value must not change) and once cancelled while it
# waits (the hazard: before the fix the cancellation is swallowed, after it the task ends
# cancelled). ``block`` makes the awaits long only in the cancelled run.

HARNESS = '''

async def _main():
    print("normal:", repr(await target(False)), flush=True)
    task = asyncio.create_task(target(True))
    await asyncio.sleep(0.2)
    task.cancel()
    done, _ = await asyncio.wait({task}, timeout=2)
    if not done:
        print("cancel: STILL RUNNING", flush=True)
        os._exit(0)  # the task would swallow asyncio.run's own cancellation too
    if task.cancelled():
        print("cancel: PROPAGATED", flush=True)
    elif task.exception() is not None:
        print("cancel: RAISED", type(task.exception()).__name__, flush=True)
    else:
        print("cancel: SWALLOWED", repr(task.result()), flush=True)


asyncio.run(_main())
'''

SHAPES = {
    # a handler that ends in another statement: `raise` appended
    "append-raise": ('''
async def target(block):
    try:
        await asyncio.sleep(3600 if block else 0.01)
        return "done"
    except asyncio.CancelledError:
        print("cancelled", flush=True)
''', "STILL" if False else "SWALLOWED"),
    # `pass` -> `raise` in a loop that would go on forever
    "pass": ('''
async def target(block):
    n = 0
    while True:
        try:
            await asyncio.sleep(3600 if block else 0.01)
            n += 1
            if n == 3:
                return n
        except asyncio.CancelledError:
            pass
''', "STILL RUNNING"),
    # a bare `return` -> `raise`: the return skipped what follows either way
    "return": ('''
async def target(block):
    print("start", flush=True)
    try:
        await asyncio.sleep(3600 if block else 0.01)
        print("work done", flush=True)
    except asyncio.CancelledError:
        print("cancelled, giving up", flush=True)
        return
    print("after", flush=True)
    return "ok"
''', "SWALLOWED"),
    # `break` -> `raise` with nothing after the loop
    "break": ('''
async def target(block):
    got = []
    while True:
        try:
            await asyncio.sleep(3600 if block else 0.01)
            got.append(len(got))
            if len(got) == 3:
                return got
        except asyncio.CancelledError:
            print("stopping", flush=True)
            break
''', "SWALLOWED"),
    # `continue` -> `raise` in a loop with nothing after it
    "continue": ('''
async def target(block):
    for i in range(3):
        try:
            await asyncio.sleep(3600 if block else 0.01)
        except asyncio.CancelledError:
            print("skipping", i, flush=True)
            continue
        print("item", i, flush=True)
''', "STILL RUNNING"),
    # `except asyncio.CancelledError: raise` inserted before a bare `except:`
    "before-bare-except": ('''
async def target(block):
    try:
        await asyncio.sleep(3600 if block else 0.01)
        raise ValueError("bad input")
    except:  # noqa: E722
        print("failed, using the fallback", flush=True)
        return "fallback"
''', "SWALLOWED"),
    # ... before a tuple that holds CancelledError
    "before-tuple": ('''
async def target(block):
    try:
        await asyncio.sleep(3600 if block else 0.01)
        raise ValueError("bad input")
    except (asyncio.CancelledError, ValueError):
        print("handled", flush=True)
        return None
''', "SWALLOWED"),
    # cancel-then-await: `except BaseException` -> `(CancelledError, Exception)` + cancelling() check
    "cancel-then-await": ('''
async def worker(block):
    try:
        await asyncio.sleep(3600)
    finally:
        await asyncio.sleep(3600 if block else 0.01)  # closing takes a while


async def target(block):
    w = asyncio.create_task(worker(block))
    await asyncio.sleep(0.01)
    w.cancel()
    try:
        await w
    except BaseException:
        print("worker gone", flush=True)
''', "SWALLOWED"),
}


def _harness(body: str) -> str:
    return "import asyncio\nimport os\n\n" + body.lstrip() + HARNESS


def _outcome(src: bytes, tmp_path, name: str) -> tuple[list[str], str]:
    rc, out, err = _run(src, tmp_path, name, 30)
    assert rc == 0, (rc, out, err)
    lines = out.splitlines()
    cancel = next(line for line in lines if line.startswith("cancel: "))
    normal_end = next(i for i, line in enumerate(lines) if line.startswith("normal: "))
    return lines[:normal_end + 1], cancel


@pytest.mark.timeout(90)
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_every_fix_shape_stops_swallowing_and_keeps_the_normal_path(tmp_path, shape):
    body, hazard = SHAPES[shape]
    src = _harness(body)
    found = lint_source(src.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and found[0].fix is not None, found
    fixed = _fixed(src)
    before_normal, before_cancel = _outcome(src.encode(), tmp_path, "before.py")
    after_normal, after_cancel = _outcome(fixed, tmp_path, "after.py")
    print(shape, before_normal, before_cancel, "->", after_normal, after_cancel)
    assert before_cancel.startswith("cancel: " + hazard), before_cancel
    assert after_cancel == "cancel: PROPAGATED", after_cancel
    assert before_normal == after_normal  # same output and return value without cancellation


# audit 5.3: `break` -> `raise` used to skip the code after the loop. Now: no fix there.
BREAK_THEN_FLUSH = _harness('''
FLUSHED = []


async def target(block):
    while True:
        try:
            await asyncio.sleep(3600 if block else 0.01)
            if not block:
                break
        except asyncio.CancelledError:
            break
    FLUSHED.append(block)
    print("flush ran, cancelled run:", block, flush=True)
''')


@pytest.mark.timeout(60)
@pytest.mark.parametrize("old,new", [("            break\n    FLUSHED", "            break\n    FLUSHED"),
                                     ("        except asyncio.CancelledError:\n            break",
                                      "        except asyncio.CancelledError:\n            pass\n            break")],
                         ids=["break", "pass-then-break"])
def test_no_fix_where_raise_would_skip_code_after_the_loop(tmp_path, old, new):
    src = BREAK_THEN_FLUSH.replace(old, new)
    found = lint_source(src.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and found[0].fix is None, found
    rc, out, _ = _run(src.encode(), tmp_path, "hazard.py", 30)
    assert "flush ran, cancelled run: True" in out  # what the old fix (`raise`) skipped
    # the old fix, by hand: the flush no longer runs on cancellation
    old_fix = src.replace("        except asyncio.CancelledError:\n            break",
                          "        except asyncio.CancelledError:\n            raise")
    if old_fix != src:
        rc, out, _ = _run(old_fix.encode(), tmp_path, "old_fix.py", 30)
        assert "flush ran, cancelled run: True" not in out and "cancel: PROPAGATED" in out


# issue 26 / runtime_guard/ray.py: a nested handler that falls through into the outer handler's
# bare `raise` re-raises on every normal way out: not a finding, and the program shows why.
NESTED_FALLS_INTO_RAISE = _harness('''
async def target(block):
    try:
        await asyncio.sleep(3600 if block else 0.01)
    except asyncio.CancelledError:
        print("cleaning up", flush=True)
        try:
            await asyncio.sleep(3600 if block else 0.01)
        except asyncio.CancelledError:
            print("cleanup cut short", flush=True)
        raise
    return "done"
''').replace("    task.cancel()\n    done, _", "    task.cancel()\n    await asyncio.sleep(0.2)\n"
                                             "    task.cancel()\n    done, _")


@pytest.mark.timeout(60)
def test_nested_handler_falling_into_the_outer_raise_is_not_a_finding(tmp_path):
    assert lint_source(NESTED_FALLS_INTO_RAISE.encode(), "nested.py", SETTINGS).diagnostics == []
    rc, out, _ = _run(NESTED_FALLS_INTO_RAISE.encode(), tmp_path, "nested.py", 30)
    assert rc == 0 and "cleanup cut short" in out and "cancel: PROPAGATED" in out, out


# fix audit N2: `await t` on a job task that someone else cancels raises CancelledError in the
# runner although nobody cancelled the runner. The fix must keep the runner's own way out on
# that path (it re-raises only when the current task is being cancelled) and still propagate
# the runner's own cancellation.
INNER_CANCEL = textwrap.dedent('''
    import asyncio

    jobs = {}


    async def job(n):
        await asyncio.sleep(10)
        return n


    async def run_job(n):
        t = asyncio.create_task(job(n))
        jobs[n] = t
        try:
            print("job result:", await t, flush=True)
        except asyncio.CancelledError:
            print(f"job {n} was stopped", flush=True)
            return


    async def main():
        runner = asyncio.create_task(run_job(1))
        await asyncio.sleep(0.05)
        jobs[1].cancel()  # the user stops job 1, not the runner
        await runner
        print("server goes on serving", flush=True)
        runner = asyncio.create_task(run_job(2))
        await asyncio.sleep(0.05)
        runner.cancel()  # the server stops the runner itself
        try:
            await runner
            print("runner: SWALLOWED", flush=True)
        except asyncio.CancelledError:
            print("runner: PROPAGATED", flush=True)


    asyncio.run(main())
''')

INNER_CANCEL_SHAPES = {
    "return": INNER_CANCEL,
    "falls-off-the-end": INNER_CANCEL.replace('was stopped", flush=True)\n        return\n',
                                              'was stopped", flush=True)\n'),
    "broad": INNER_CANCEL.replace("except asyncio.CancelledError:\n        print(f",
                                  "except BaseException:\n        print(f"),
}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("shape", sorted(INNER_CANCEL_SHAPES))
def test_another_tasks_cancellation_is_handled_as_before(tmp_path, shape):
    src = INNER_CANCEL_SHAPES[shape]
    assert src != INNER_CANCEL or shape == "return"
    found = lint_source(src.encode(), "hazard.py", SETTINGS).diagnostics
    assert [d.code for d in found] == ["SHD104"] and found[0].fix is not None, found
    fixed = _fixed(src)
    rc, before, err = _run(src.encode(), tmp_path, "before.py", 30)
    assert rc == 0, err
    assert before.splitlines() == ["job 1 was stopped", "server goes on serving", "job 2 was stopped",
                                   "runner: SWALLOWED"]
    rc, after, err = _run(fixed, tmp_path, "after.py", 30)
    print(shape, fixed.decode(), after, err)
    assert rc == 0, err  # the old fix: CancelledError out of asyncio.run, rc 1
    # the job's cancellation: as before; the runner's own: no longer swallowed
    assert after.splitlines() == ["job 1 was stopped", "server goes on serving", "job 2 was stopped",
                                  "runner: PROPAGATED"] if shape != "broad" else \
        after.splitlines() == ["job 1 was stopped", "server goes on serving", "runner: PROPAGATED"]


def test_no_fix_below_python_311():
    """Without ``Task.cancelling()`` a plain ``raise`` cannot tell the two paths apart."""
    for src in INNER_CANCEL_SHAPES.values():
        found = lint_source(src.encode(), "hazard.py",
                            Settings(selected=("SHD104",), target_version="py310")).diagnostics
        assert [d.code for d in found] == ["SHD104"] and found[0].fix is None, found
