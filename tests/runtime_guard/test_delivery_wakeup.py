"""``signals.on_delivery``'s second wake source: the signal wakeup fd (``signal.set_wakeup_fd``).

faulthandler (the first source) writes only the receiving thread's own stack: a signal taken by a
thread with no Python state (a C++ thread, e.g. gloo's) wrote nothing, so the helper never woke
while the main thread was blocked in C (measured: 3 of 55 SIGTERMs unheard with the main thread in
a gloo rendezvous under load). CPython's C handler writes the signal's number to the wakeup fd
from whatever thread takes it, walking no frames. The slot is shared with asyncio and trio: it is
taken only where unowned, nobody's fd is replaced by ours, and it is given back.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from rg_testutil import REPO, SCRIPTS, child_env, run_code

pytestmark = pytest.mark.timeout(120)

# The wakeup fd as it is, read without changing it for long (the raw C function: no wrapper).
PROBE = """
import _signal
def slot():
    old = _signal.set_wakeup_fd(-1)
    if old != -1:
        _signal.set_wakeup_fd(old, warn_on_full_buffer=False)
    return old
"""


def test_sigterm_taken_by_a_thread_without_python_state_wakes_the_helper(tmp_path: Path) -> None:
    # Before the wakeup fd (9e2d5c1) the helper never woke: the process slept on for 60 s.
    heard = tmp_path / "heard"
    proc = subprocess.Popen([sys.executable, str(SCRIPTS / "delivery_raw_thread.py"), str(heard)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=child_env(),
                            cwd=str(REPO))
    try:
        out = proc.communicate(timeout=20)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        out = "TIMEOUT: " + proc.communicate()[0]
    assert proc.returncode == 0 and heard.exists(), out
    assert "sending" in out and "main thread returned" not in out, out


def test_asyncio_signal_handlers_before_and_after() -> None:
    proc = run_code(PROBE + """
import asyncio, os, signal
from runtime_guard import signals
signal.signal(signal.SIGTERM, lambda s, f: None)

async def until(cond):  # liveness bound only: a loaded machine may take a while
    for _ in range(200):
        if cond():
            return
        await asyncio.sleep(0.05)

# asyncio holds the slot first: ours waits, theirs is untouched and works
loop = asyncio.new_event_loop()
got = []
loop.add_signal_handler(signal.SIGUSR1, got.append, "usr1")
theirs = loop._csock.fileno()
assert signals.on_delivery(signal.SIGTERM, lambda: None)
assert slot() == theirs, (slot(), theirs)
loop.call_soon(os.kill, os.getpid(), signal.SIGUSR1)
loop.run_until_complete(until(lambda: got))
assert got == ["usr1"], got
# it gives the slot up (its last handler removed): ours takes it then
loop.remove_signal_handler(signal.SIGUSR1)
ours = signals._wake[1]
assert slot() == ours, (slot(), ours)

# asyncio takes it over ours: it is told -1, its handler works, and closing gives ours back
loop.add_signal_handler(signal.SIGUSR2, got.append, "usr2")
assert slot() == theirs
loop.call_soon(os.kill, os.getpid(), signal.SIGUSR2)
loop.run_until_complete(until(lambda: len(got) == 2))
assert got == ["usr1", "usr2"], got
loop.close()
assert slot() == ours

# asyncio.run with a handler added inside, as servers do
async def main():
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, got.append, "run")
    os.kill(os.getpid(), signal.SIGUSR1)
    await until(lambda: got[-1] == "run")
asyncio.run(main())
assert got[-1] == "run", got
assert slot() == ours

# forgotten: the slot is -1 again and set_wakeup_fd is the builtin
signals.forget_delivery(signal.SIGTERM)
assert slot() == -1 and not signals._wake
assert not getattr(signal.set_wakeup_fd, "_runtime_guard_hides", False)
print("ok")
""")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_off_the_main_thread_and_after_fork() -> None:
    proc = run_code(PROBE + """
import os, signal, threading, time
from runtime_guard import signals
signal.signal(signal.SIGTERM, lambda s, f: None)
signal.signal(signal.SIGUSR1, lambda s, f: None)

# off the main thread: no error, the slot is left alone (faulthandler alone hears)
result = []
t = threading.Thread(target=lambda: result.append(signals.on_delivery(signal.SIGTERM, lambda: None)))
t.start(); t.join()
assert result == [True] and slot() == -1 and not signals._wake, (result, slot())

# from the main thread: taken
woken = []
assert signals.on_delivery(signal.SIGUSR1, lambda: woken.append(1))
assert slot() == signals._wake[1]

# a forked child gives it back (it leads to the parent's pipe): the child's SIGUSR1 wakes no one
pid = os.fork()
if pid == 0:
    code = 0 if slot() == -1 and not signals._wake else 1
    os.kill(os.getpid(), signal.SIGUSR1)
    time.sleep(0.2)
    os._exit(code)
_, status = os.waitpid(pid, 0)
assert os.WEXITSTATUS(status) == 0, status
time.sleep(1.0)
assert woken == [], "the child's signal woke the parent's helper"
assert slot() == signals._wake[1]
print("ok")
""")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_trio_finds_the_slot_unowned_and_gives_it_back() -> None:
    # trio.run warns (RuntimeWarning) where the wakeup fd it replaces is not -1; under -W error
    # that is an exception. Not a dependency: skipped where trio is not installed.
    pytest.importorskip("trio")
    proc = run_code(PROBE + """
import os, signal, warnings
warnings.simplefilter("error")
import trio
from runtime_guard import signals
signal.signal(signal.SIGTERM, lambda s, f: None)
assert signals.on_delivery(signal.SIGTERM, lambda: None)
ours = signals._wake[1]
assert slot() == ours

async def main():
    assert slot() not in (-1, ours)
    with trio.open_signal_receiver(signal.SIGUSR1) as received:
        os.kill(os.getpid(), signal.SIGUSR1)
        async for signum in received:
            assert signum == signal.SIGUSR1
            break
trio.run(main)
assert slot() == ours, slot()
print("ok")
""")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_a_handler_installed_later_decides() -> None:
    # As with faulthandler's hook (removed by a later signal.signal), the wakeup byte of a signal
    # whose handler was replaced since on_delivery wakes no one: the new handler decides.
    proc = run_code("""
import os, signal, time
from runtime_guard import signals
signal.signal(signal.SIGUSR1, lambda s, f: None)
woken = []
assert signals.on_delivery(signal.SIGUSR1, lambda: woken.append(1))
signal.signal(signal.SIGUSR1, lambda s, f: None)
os.kill(os.getpid(), signal.SIGUSR1)
time.sleep(1.0)
assert woken == [], woken
signals.on_delivery(signal.SIGUSR1, lambda: woken.append(2))  # registered over the new one: heard
os.kill(os.getpid(), signal.SIGUSR1)
for _ in range(100):
    if woken:
        break
    time.sleep(0.05)
assert woken == [2], woken
print("ok")
""")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_signal_imported_after_the_exit_report_is_wrapped_too() -> None:
    # The exit report does not import ``signal`` (start-up cost): its import hook wraps it later.
    proc = run_code(PROBE + """
import sys
from runtime_guard import exit_report, signals
assert exit_report.install()
assert "signal" not in sys.modules and signals._wake
import signal
ours = signals._wake[1]
assert signal.set_wakeup_fd(-1) == -1 and slot() == ours  # told -1, and -1 keeps ours
print("ok")
""")
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
