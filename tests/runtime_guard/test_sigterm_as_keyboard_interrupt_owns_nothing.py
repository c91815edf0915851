"""``sigterm_as_keyboard_interrupt()`` changes only what it owns (issue 26, docs/fix-safety.md).

Each case is a real program in a real subprocess, signalled for real: SIGTERM that is ignored
stays ignored; a handler the program installed before (or installs later) is the one that runs;
a child forked afterwards dies of SIGTERM (-15) as without the helper; SIGTERM after the loop
has ended kills the process with -15 as before; with another runtime_guard handler stacked on
top (``LoopThread``) a forked child still gets the default back. SHD402's fix inserts this
helper, so each of these is a path where that fix must not change the program.
"""
from __future__ import annotations

import signal

import pytest

from rg_testutil import popen_code, run_code, wait_for_line

pytestmark = pytest.mark.timeout(120)


def test_ignored_sigterm_stays_ignored() -> None:
    p = popen_code("""
        import asyncio, signal, runtime_guard
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        returned = runtime_guard.sigterm_as_keyboard_interrupt()
        print("ignored", signal.getsignal(signal.SIGTERM) is signal.SIG_IGN, returned is signal.SIG_IGN, flush=True)
        async def main():
            print("ready", flush=True)
            await asyncio.sleep(1.5)
            print("survived", flush=True)
        asyncio.run(main())
    """)
    lines = wait_for_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    assert lines[0].strip() == "ignored True True", lines
    assert out.splitlines() == ["survived"], out


GRACEFUL = """
    import asyncio, os, signal, sys, runtime_guard
    stop = False
    def graceful(signum, frame):
        global stop
        stop = True
        os.write(1, b"graceful handler ran\\n")  # not print: the signal may land inside print("ready")
    if sys.argv[1] == "before":
        signal.signal(signal.SIGTERM, graceful)
    runtime_guard.sigterm_as_keyboard_interrupt()
    async def main():
        if sys.argv[1] == "later":
            signal.signal(signal.SIGTERM, graceful)  # e.g. a library the program calls
        print("ready", flush=True)
        while not stop:
            await asyncio.sleep(0.05)
        print("finished the step, saved", flush=True)
        return 3
    print("main returned", asyncio.run(main()), flush=True)
"""


@pytest.mark.parametrize("when", ["before", "later"])
def test_the_programs_own_handler_is_the_one_that_runs(when: str) -> None:
    """Chaining (ours after theirs) would turn a graceful stop into a KeyboardInterrupt; the
    helper leaves a handler installed before alone, and one installed later replaces it."""
    p = popen_code(GRACEFUL.replace("sys.argv[1]", repr(when)))
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    assert out.splitlines()[-3:] == ["graceful handler ran", "finished the step, saved", "main returned 3"], out
    assert "KeyboardInterrupt" not in out


FORK_CHILD = """
    import asyncio, multiprocessing, signal, sys, time, runtime_guard
    def work(ready):
        ready.set()
        time.sleep(30)
    def run_loop_child(ready):
        ready.set()
        asyncio.run(asyncio.sleep(30))
    async def main():
        if "{stack}" == "loop_thread":
            t = runtime_guard.LoopThread(target=lambda: asyncio.run(asyncio.sleep(0)), daemon=True)
            t.start(); t.join()  # installs LoopThread's handler over ours (it chains to ours)
        elif "{stack}" == "torch":
            __import__("runtime_guard.torch").torch.install_distributed_teardown()  # SHD502's helper over ours (it chains to ours)
        for target in (work, run_loop_child):
            ctx = multiprocessing.get_context("fork")
            ready = ctx.Event()
            child = ctx.Process(target=target, args=(ready,))
            child.start()
            # the child runs its target, so fork's hooks have given it the default action back (a
            # SIGTERM before them would be dropped with the handler: a fixed 0.5 s wait was a guess)
            await asyncio.to_thread(ready.wait, 30)
            child.terminate()
            child.join(10)
            print(target.__name__, "exit", child.exitcode, flush=True)
    runtime_guard.sigterm_as_keyboard_interrupt()
    asyncio.run(main())
"""


@pytest.mark.parametrize("stack", ["none", "loop_thread", pytest.param("torch", marks=pytest.mark.torch)])
def test_a_forked_child_dies_of_sigterm_as_before(stack: str) -> None:
    """Also with another runtime_guard handler installed over ours: the child unwinds both."""
    r = run_code(FORK_CHILD.format(stack=stack), timeout=90)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["work exit -15", "run_loop_child exit -15"], r.stdout + r.stderr
    assert "KeyboardInterrupt" not in r.stderr


# WAITS: the programs signalled below wait in 0.05 s slices, not in one long sleep or await. CPython runs
# a Python handler (the helper's is one) between bytecodes only: a SIGTERM that lands after the last
# check and before the sleep's clock_nanosleep (or the idle event loop's epoll_wait: asyncio.run sets
# no wakeup fd) waits for that call to end. These tests are about what the handler does, not about
# how soon it runs.


def test_sigterm_outside_the_loop_still_kills_with_minus_15() -> None:
    """After asyncio.run has returned the hazard is gone: SIGTERM does what it did (die, -15,
    no traceback, no finally), not a KeyboardInterrupt."""
    p = popen_code("""
        import asyncio, time, runtime_guard
        runtime_guard.sigterm_as_keyboard_interrupt()
        asyncio.run(asyncio.sleep(0))
        try:
            print("ready", flush=True)
            for _ in range(600):  # short waits: see WAITS above
                time.sleep(0.05)
        finally:
            print("finally ran", flush=True)
    """)
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == -signal.SIGTERM, out
    assert "finally ran" not in out and "KeyboardInterrupt" not in out, out


def test_sigterm_in_the_loop_runs_finally_and_anywhere_covers_sync_code() -> None:
    p = popen_code("""
        import asyncio, signal, time, runtime_guard
        runtime_guard.sigterm_as_keyboard_interrupt()
        runtime_guard.sigterm_as_keyboard_interrupt()  # a second call changes nothing
        async def main():
            try:
                print("ready", flush=True)
                for _ in range(600):  # short waits: see WAITS above
                    await asyncio.sleep(0.05)
            finally:
                print("task finally ran", flush=True)
        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        runtime_guard.sigterm_as_keyboard_interrupt(anywhere=True)
        try:
            print("sync ready", flush=True)
            for _ in range(600):
                time.sleep(0.05)
        except KeyboardInterrupt:
            print("sync interrupted", flush=True)
    """)
    wait_for_line(p, "ready")
    p.send_signal(signal.SIGTERM)
    lines = wait_for_line(p, "sync ready")
    assert [x.strip() for x in lines[:2]] == ["task finally ran", "interrupted"], lines
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0, out
    assert out.splitlines() == ["sync interrupted"], out
