"""SHD402 for real: SIGTERM to a plain process running asyncio.run.

Hazard: the process dies on the spot; every task's `finally` is skipped, all lease
markers leak. Fixed (the exact autofix output): SIGTERM cancels the tasks like Ctrl+C,
0 markers leak, the exit status reports the interrupt.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

from piped_child import PipedChild
from signal_driver import signalled

SETTINGS = Settings(selected=("SHD402",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the fixed program imports runtime_guard from this checkout
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
N = 5

HAZARD = textwrap.dedent('''
    import asyncio
    import os
    import sys

    LEASE_DIR = sys.argv[1]

    async def hold_sandbox(i):
        path = os.path.join(LEASE_DIR, f"sandbox-{i}.lease")
        open(path, "w").close()
        try:
            while True:
                await asyncio.sleep(0.05)  # a long trajectory's steps (see WAITS below)
        finally:
            os.remove(path)  # release the sandbox

    async def main():
        tasks = [asyncio.create_task(hold_sandbox(i)) for i in range(%d)]
        await asyncio.sleep(0.2)
        print("ready", flush=True)
        await asyncio.gather(*tasks)

    if __name__ == "__main__":
        asyncio.run(main())
''' % N)


# WAITS: the signalled programs here wait in short sleeps, not in one long sleep or await. The fixed
# programs' SIGTERM handler (and asyncio.run's SIGINT handler) are Python handlers, run between
# bytecodes: a signal that lands just before the event loop's epoll_wait (asyncio.run sets no wakeup
# fd) or time.sleep's clock_nanosleep would wait for that call's timeout. What the handler does is
# what these tests are about.


def _terminate(path, lease_dir) -> tuple[int, list[str], str]:
    rc, _, err = signalled([path, lease_dir], signal.SIGTERM, cwd=REPO, env=ENV)
    return rc, sorted(os.listdir(lease_dir)), err


@pytest.mark.timeout(90)
def test_sigterm_cleanup_before_and_after_fix(tmp_path):
    hazard = tmp_path / "hazard.py"
    hazard.write_text(HAZARD)
    assert [d.code for d in lint_source(HAZARD.encode(), str(hazard), SETTINGS).diagnostics] == ["SHD402"]

    leases = tmp_path / "before"
    leases.mkdir()
    rc, left, _ = _terminate(hazard, leases)
    assert rc == -signal.SIGTERM  # killed by the signal, no Python code ran
    assert len(left) == N  # every sandbox leaked

    fixed_src = fix_source(HAZARD.encode(), str(hazard), SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()" in fixed_src
    assert lint_source(fixed_src, "fixed.py", SETTINGS).diagnostics == []
    fixed = tmp_path / "fixed.py"
    fixed.write_bytes(fixed_src)
    leases = tmp_path / "after"
    leases.mkdir()
    rc, left, err = _terminate(fixed, leases)
    assert left == []  # every finally ran
    assert "KeyboardInterrupt" in err
    assert rc in (-signal.SIGINT, 130)  # the interrupt is visible in the exit status


FORKS_A_CHILD = textwrap.dedent('''
    import asyncio
    import multiprocessing
    import sys
    import time


    def work(ready):
        ready.set()
        time.sleep(30)


    async def main():
        ctx = multiprocessing.get_context("fork")
        ready = ctx.Event()
        child = ctx.Process(target=work, args=(ready,))
        child.start()
        await asyncio.to_thread(ready.wait, 30)  # past fork's hooks (a fixed wait was a guess)
        if sys.argv[1:] == ["terminate"]:
            child.terminate()
        else:
            child.kill()
        child.join(10)
        print("child exit", child.exitcode, flush=True)
        return 7


    if __name__ == "__main__":
        result = asyncio.run(main())
        print("main returned", result, flush=True)
''')


@pytest.mark.timeout(90)
def test_a_forked_child_meets_the_same_fate_under_sigterm(tmp_path):
    """docs/fix-safety.md, children: SIGTERM to a forked child is not SHD402's hazard. The helper
    gives a child forked after it the default action back, so the child dies of SIGTERM (-15)
    as in the original (before: it inherited the KeyboardInterrupt handler and exited 1)."""
    (found,) = lint_source(FORKS_A_CHILD.encode(), "forks.py", SETTINGS).diagnostics
    fixed_src = fix_source(FORKS_A_CHILD.encode(), "forks.py", SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()\n    result = asyncio.run" in fixed_src
    runs = {}
    for name, text in (("original", FORKS_A_CHILD.encode()), ("fixed", fixed_src)):
        path = tmp_path / f"{name}.py"
        path.write_bytes(text)
        for how in ("kill", "terminate"):
            done = subprocess.run([sys.executable, str(path), how], cwd=REPO, env=ENV, capture_output=True,
                                  text=True, timeout=60)
            runs[name, how] = (done.returncode, done.stdout, done.stderr)
    assert runs["original", "kill"] == runs["fixed", "kill"] == (0, "child exit -9\nmain returned 7\n", "")
    assert runs["original", "terminate"] == runs["fixed", "terminate"] == (0, "child exit -15\nmain returned 7\n", "")


# A program whose phases are: a loop (asyncio.run), then sync work. argv: "ready-loop" or
# "ready-sync" says in which phase it prints "ready" and waits for a signal.
PHASES = textwrap.dedent('''
    import asyncio
    import sys
    import time


    async def main():
        try:
            print("loop started", flush=True)
            if sys.argv[1] == "loop":
                print("ready", flush=True)
                for _ in range(600):  # see WAITS
                    await asyncio.sleep(0.05)
            await asyncio.sleep(0.1)
            return 5
        finally:
            print("loop cleanup", flush=True)


    if __name__ == "__main__":
        result = asyncio.run(main())
        print("loop returned", result, flush=True)
        try:
            if sys.argv[1] == "sync":
                print("ready", flush=True)
                for _ in range(600):  # see WAITS
                    time.sleep(0.05)
        finally:
            print("sync cleanup", flush=True)
        print("done", file=sys.stderr, flush=True)
        sys.exit(3)
''')


def _run(path, phase, sig):
    with PipedChild([sys.executable, path, phase], cwd=REPO, env=ENV) as proc:
        out = ""
        if sig is not None:
            while True:
                line = proc.readline()
                assert line, "no ready line"
                out += line
                if line.strip() == "ready":
                    break
            proc.send_signal(sig)
        status, rest, err = proc.finish(30)
    return status, out + rest, err.strip().splitlines()[-1:] if err.strip() else []


@pytest.mark.timeout(120)
def test_outside_the_hazard_the_fixed_program_is_the_original(tmp_path):
    """Normal run, Ctrl+C in the loop, SIGTERM after the loop ended (sync code): the same
    stdout, exit status and last stderr line (a traceback's line numbers differ by the inserted
    line). Before: SIGTERM after the loop raised KeyboardInterrupt there (traceback, status
    -2, the sync finally ran) instead of killing the process with -15."""
    (found,) = lint_source(PHASES.encode(), "phases.py", SETTINGS).diagnostics
    fixed_src = fix_source(PHASES.encode(), "phases.py", SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()\n    result = asyncio.run" in fixed_src
    paths = {}
    for name, text in (("original", PHASES.encode()), ("fixed", fixed_src)):
        paths[name] = tmp_path / f"{name}.py"
        paths[name].write_bytes(text)
    cases = {"normal": ("none", None), "ctrl-c in the loop": ("loop", signal.SIGINT),
             "sigterm after the loop": ("sync", signal.SIGTERM)}
    for case, (phase, sig) in cases.items():
        before = _run(paths["original"], phase, sig)
        after = _run(paths["fixed"], phase, sig)
        assert before == after, (case, before, after)
    assert _run(paths["original"], "none", None) == (
        3, "loop started\nloop cleanup\nloop returned 5\nsync cleanup\n", ["done"])
    assert _run(paths["fixed"], "sync", signal.SIGTERM)[0] == -signal.SIGTERM
    # and on the hazard's path the fix acts: the loop's finally runs, the sync code does not
    rc, out, err = _run(paths["fixed"], "loop", signal.SIGTERM)
    assert "loop cleanup" in out and "loop returned" not in out, (rc, out, err)
    assert rc in (-signal.SIGINT, 130) and err[0].startswith("KeyboardInterrupt"), (rc, out, err)
    assert _run(paths["original"], "loop", signal.SIGTERM) == (-signal.SIGTERM, "loop started\nready\n", [])


# The program's own SIGTERM handler comes from a module the rule does not read (a library).
LIBRARY = textwrap.dedent('''
    import os
    import signal

    stop = []


    def graceful(signum, frame):
        os.write(1, b"graceful handler ran\\n")  # not print: the signal may land inside print("ready")
        stop.append(signum)


    def install():
        signal.signal(signal.Signals(15), graceful)
''')

OWN_HANDLER = textwrap.dedent('''
    import asyncio
    import sys

    import graceful_lib


    async def main():
        if sys.argv[1] == "later":
            graceful_lib.install()
        print("ready", flush=True)
        while not graceful_lib.stop:
            await asyncio.sleep(0.05)
        print("stopped after the step", flush=True)
        return 4


    if __name__ == "__main__":
        if sys.argv[1] == "before":
            graceful_lib.install()
        result = asyncio.run(main())
        print("main returned", result, flush=True)
''')


@pytest.mark.timeout(120)
def test_a_handler_the_program_installs_itself_keeps_running(tmp_path):
    """The rule cannot see a handler installed by a library, so it reports and fixes. Whether
    the library installs it before the fix's line or later (inside the coroutine), on SIGTERM
    the program's handler runs and the program stops as it did (before: a handler installed
    before the fix's line was replaced, and SIGTERM raised KeyboardInterrupt)."""
    (tmp_path / "graceful_lib.py").write_text(LIBRARY)
    (found,) = lint_source(OWN_HANDLER.encode(), "own.py", SETTINGS).diagnostics
    fixed_src = fix_source(OWN_HANDLER.encode(), "own.py", SETTINGS, unsafe=True).source
    assert b"runtime_guard.sigterm_as_keyboard_interrupt()\n    result = asyncio.run" in fixed_src
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(tmp_path), ENV["PYTHONPATH"]]))
    results = {}
    for name, text in (("original", OWN_HANDLER.encode()), ("fixed", fixed_src)):
        path = tmp_path / f"{name}.py"
        path.write_bytes(text)
        for when in ("before", "later"):
            results[name, when] = signalled([path, when], signal.SIGTERM, cwd=REPO, env=env)
    expected = (0, "graceful handler ran\nstopped after the step\nmain returned 4\n", "")
    for when in ("before", "later"):
        assert results["original", when] == results["fixed", when] == expected, (when, results)
