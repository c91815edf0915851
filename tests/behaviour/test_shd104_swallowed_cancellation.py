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

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD104",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LEASE = textwrap.dedent('''
    import asyncio

    LEASES = set()

    async def hold_lease(name):
        LEASES.add(name)
        try:
            await asyncio.sleep(3600)  # renew until done
        except asyncio.CancelledError:
            print("lease holder cancelled", flush=True)
        return "finished"

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


def _fixed(src: str) -> bytes:
    fixed = fix_source(src.encode(), "fixed.py", SETTINGS, unsafe=True).source
    assert lint_source(fixed, "fixed.py", SETTINGS).diagnostics == []
    return fixed


@pytest.mark.timeout(60)
def test_timeout_ignored_and_lease_kept_before_fix(tmp_path):
    assert [d.code for d in lint_source(LEASE.encode(), "hazard.py", SETTINGS).diagnostics] == ["SHD104"]
    rc, out, _ = _run(LEASE.encode(), tmp_path, "hazard.py", 30)
    assert rc == 0
    assert "RESULT finished" in out  # the timeout was silently ignored
    assert "LEASES ['gpu-0']" in out  # and the lease leaked

    rc, out, _ = _run(_fixed(LEASE), tmp_path, "fixed.py", 30)
    assert rc == 0
    assert "TIMEOUT" in out and "LEASES []" in out


@pytest.mark.timeout(60)
def test_taskgroup_shutdown_hangs_before_fix(tmp_path):
    assert [d.code for d in lint_source(TASKGROUP.encode(), "hazard.py", SETTINGS).diagnostics] == ["SHD104"]
    rc, out, _ = _run(TASKGROUP.encode(), tmp_path, "hazard.py", 8)
    assert "ready" in out
    assert rc is None  # still running after 8 s: the group waits forever for the heartbeat

    fixed = _fixed(TASKGROUP)
    assert b"except asyncio.CancelledError:" in fixed
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
    rc, out, _ = _run(SUPERVISOR.encode(), tmp_path, "hazard.py", 30)
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
