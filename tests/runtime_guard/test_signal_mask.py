"""No runtime_guard thread that runs the user's code leaves SIGINT or SIGTERM blocked (issue 26, 3.1).

A thread's signal mask is inherited by the threads it starts and by the processes forked or
exec'd from it. runtime_guard used to block SIGINT/SIGTERM in its threads (``LoopThread``,
``hard_exit``'s atexit thread, the watchdog monitor that calls ``on_stall``, ``QuietTimer``,
``daemon_thread``), so a ``bash -c`` or ``multiprocessing`` child started from code running there
survived SIGTERM. Each test below runs a real program in which code on one of those threads
starts (a) a thread, (b) ``bash -c "sleep 30"`` in its own session, ended by ``killpg(SIGTERM)``,
(c) a ``multiprocessing`` child with ``fork`` and (d) one with ``spawn``, each ended by
``terminate()``; each must be gone within 1 s with status -15, and none may have SIGINT or
SIGTERM in its ``SigBlk``. The last test is the liveness the old mask was meant to protect:
SIGINT/SIGTERM sent while the main thread sleeps in ``time.sleep(60)`` (in ``clock_nanosleep``)
reach it at once with loop threads (and their loops' threads) running, and none of those threads
blocks them.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from piped_child import PipedChild
from rg_testutil import REPO, child_env

BLOCKABLE = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))

PROBE = textwrap.dedent('''
    import json, multiprocessing, os, signal, subprocess, sys, threading, time

    def sigblk(path="/proc/thread-self/status"):
        with open(path) as f:
            for line in f:
                if line.startswith("SigBlk:"):
                    return int(line.split()[1], 16)

    def _child(q):
        q.put(sigblk())
        time.sleep(30)

    def _mp(method):
        ctx = multiprocessing.get_context(method)
        q = ctx.Queue()
        p = ctx.Process(target=_child, args=(q,))
        p.start()
        mask = q.get(timeout=60)
        t0 = time.monotonic()
        p.terminate()
        p.join(1.0)
        out = {"mask": mask, "alive": p.is_alive(), "exitcode": p.exitcode, "seconds": time.monotonic() - t0}
        if p.is_alive():
            p.kill()
            p.join(10)
        return out

    def _bash():
        proc = subprocess.Popen(["bash", "-c", "sleep 30"], start_new_session=True)
        mask = sigblk(f"/proc/{proc.pid}/status")
        time.sleep(0.2)  # bash has exec'd sleep (the mask survives execve)
        t0 = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(1.0)
        except subprocess.TimeoutExpired:
            pass
        out = {"mask": mask, "alive": proc.poll() is None, "returncode": proc.returncode,
               "seconds": time.monotonic() - t0}
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        return out

    def probe():
        """Run on the thread under test: what it and what it starts have blocked, and their fate."""
        seen = {}
        t = threading.Thread(target=lambda: seen.update(mask=sigblk()))
        t.start()
        t.join()
        return {"here": sigblk(), "thread": seen["mask"], "bash": _bash(), "fork": _mp("fork"),
                "spawn": _mp("spawn")}

    def report(result):
        os.write(1, ("RESULT " + json.dumps(result) + "\\n").encode())
''')

CONTEXTS = {
    # SHD407's fix: the user's coroutine on a LoopThread's loop
    "LoopThread": '''
        import asyncio, runtime_guard
        async def main():
            report(probe())
        t = runtime_guard.LoopThread(target=lambda: asyncio.run(main()), daemon=True)
        t.start()
        t.join(120)
    ''',
    # the same, the loop started with run_forever and the probe handed to it from the main thread
    "LoopThread-run_forever": '''
        import asyncio, runtime_guard
        loop = asyncio.new_event_loop()
        t = runtime_guard.LoopThread(target=loop.run_forever, daemon=True)
        t.start()
        async def main():
            report(probe())
        asyncio.run_coroutine_threadsafe(main(), loop).result(120)
    ''',
    # hard_exit runs the atexit handlers (the user's code) in a helper thread
    "hard_exit-atexit": '''
        import atexit, runtime_guard
        atexit.register(lambda: report(probe()))
        runtime_guard.hard_exit(0, atexit_timeout=120)
    ''',
    # the watchdog's monitor thread calls the user's on_stall
    "watchdog-on_stall": '''
        import asyncio, threading, runtime_guard.watchdog as wd
        done = threading.Event()
        def on_stall(rep):
            if not done.is_set():
                report(probe())
                done.set()
        async def main():
            wd.watch_loop(threshold=0.1, on_stall=on_stall, hard_threshold=None)
            await asyncio.sleep(0.3)
            time.sleep(0.5)  # a stall
            await asyncio.to_thread(done.wait, 120)
        asyncio.run(main())
    ''',
    # the helpers other modules build on (supervise's and the teardown deadlines, torch's teardown)
    "QuietTimer": '''
        from runtime_guard._threads import QuietTimer
        t = QuietTimer(0.01, lambda: report(probe()))
        t.start()
        t.join(120)
    ''',
    "daemon_thread": '''
        from runtime_guard._threads import daemon_thread
        t = daemon_thread(lambda: report(probe()), "probe")
        t.start()
        t.join(120)
    ''',
}


@pytest.mark.timeout(180)
@pytest.mark.parametrize("context", sorted(CONTEXTS))
def test_code_on_runtime_guard_threads_starts_killable_children(context: str, tmp_path) -> None:
    script = tmp_path / "probe_program.py"  # a file: the spawn child re-imports __main__ from it
    body = textwrap.indent(textwrap.dedent(CONTEXTS[context]), "    ")
    script.write_text(PROBE + "\n\nif __name__ == '__main__':\n" + body)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=150,
                          env=child_env(), cwd=str(REPO))
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert proc.returncode == 0 and len(lines) == 1, (proc.returncode, proc.stdout, proc.stderr)
    res = json.loads(lines[0][len("RESULT "):])
    print(context, res)
    for who in ("here", "thread"):
        assert res[who] & BLOCKABLE == 0, f"{context}: {who} has SigBlk {res[who]:#x}"
    for who in ("bash", "fork", "spawn"):
        child = res[who]
        assert child["mask"] & BLOCKABLE == 0, f"{context}: {who} child has SigBlk {child['mask']:#x}"
        assert not child["alive"], f"{context}: {who} child still running 1 s after SIGTERM: {child}"
        status = child["returncode"] if who == "bash" else child["exitcode"]
        assert status == -signal.SIGTERM, f"{context}: {who} child: {child}"


LIVENESS = '''
    import asyncio, os, signal, sys, threading, time
    from concurrent.futures import ThreadPoolExecutor
    import runtime_guard

    def spin():
        x = 0
        while True:
            x += 1

    async def serve(i):
        loop = asyncio.get_running_loop()
        pool = ThreadPoolExecutor(2)   # the loop's own threads: started from the LoopThread
        loop.run_in_executor(pool, time.sleep, 3600)
        loop.run_in_executor(pool, spin)
        await asyncio.sleep(3600)

    def on_signal(signum, frame):
        os.write(1, f"handled {signum} {time.monotonic()}\\n".encode())
        os._exit(0)

    signal.signal(signal.SIGINT, on_signal)
    if sys.argv[1] == "SIGTERM":
        signal.signal(signal.SIGTERM, on_signal)   # before the LoopThreads: theirs chains to it
    for i in range(3):
        runtime_guard.LoopThread(target=lambda i=i: asyncio.run(serve(i)), daemon=True).start()
    time.sleep(0.5)
    print("ready", flush=True)
    time.sleep(60)
    print("slept through", flush=True)
'''


def _masks(pid: int) -> dict:
    """tid -> (SigBlk, thread name) of each thread of ``pid`` now."""
    import os

    masks = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                fields = dict(ln.split(":", 1) for ln in f if ":" in ln)
            masks[tid] = (int(fields["SigBlk"].split()[0], 16), fields["Name"].strip())
        except (OSError, KeyError):
            pass  # a thread that ended meanwhile
    return masks


def _still_blocking(pid: int, masks: dict, seconds: float = 10.0) -> dict:
    """The threads of ``masks`` that block SIGINT or SIGTERM in every sample for ``seconds``.

    One sample is not enough: glibc's ``pthread_create`` blocks every signal in the creating
    thread while it creates, and the new thread starts with that mask until its first
    instructions set its own (measured here, glibc 2.36: sampling ``/proc/<pid>/task/*/status``
    while a thread starts threads in a loop shows 0xfffffffffffbfeff thousands of times in 3 s).
    Under load a pool thread can sit there long enough for one sample to see it (the CI run at
    12f487e failed so). A thread that keeps the signals blocked is what this test is about."""
    blocking = {t: m for t, m in masks.items() if m[0] & BLOCKABLE}
    deadline = time.monotonic() + seconds
    while blocking and time.monotonic() < deadline:
        time.sleep(0.05)
        now = _masks(pid)
        blocking = {t: now[t] for t in blocking if t in now and now[t][0] & BLOCKABLE}
    return {t: (hex(m), name) for t, (m, name) in blocking.items()}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("target", ["pid", "group"])
def test_signals_still_reach_a_sleeping_main_thread_promptly(signame: str, target: str) -> None:
    """The signal is sent once the main thread is inside ``clock_nanosleep`` (its ``wchan``), not
    as soon as "ready" is read.

    Measured on Linux 6.18, 2 cores, CPython 3.11 (2026-11-26; ftrace ``signal:signal_deliver``,
    ``/proc/<pid>/task/*/status``): the kernel handed every SIGINT/SIGTERM to the main thread, in
    the runs that hung too (delivered by the main tid 4 us after ``signal_generate``; afterwards no
    thread had it pending (``SigPnd``/``ShdPnd`` 0) or blocked (``SigBlk`` 0), and the main thread
    was back in ``hrtimer_nanosleep``). The old test sent the signal right after reading "ready",
    while the main thread was still between ``print`` and the sleep syscall (``/proc/<pid>/syscall``
    at send: "running" or ``futex``: ``time.sleep`` dropping the GIL to the spinning threads). CPython's C
    handler ran there and only set its flag; the main thread then entered ``clock_nanosleep(60 s)``,
    which nothing interrupts (``time.sleep`` does not watch the wakeup fd): the Python handler waits
    for the end of the sleep. That is CPython's check-then-sleep race, not the threads: sent without
    waiting, 2 of 24 signals sent while the main thread was not yet in the syscall were lost, 0 of 16
    sent while it was; waiting for ``clock_nanosleep`` first, 96 of 96 ran promptly; the same program
    with plain ``threading.Thread`` in place of ``LoopThread`` lost them the same way (5 of 28 not
    yet in the syscall, 0 of 12 in it). A signal
    mask cannot close that window, so the test asserts what holds: no thread of the program blocks
    the signals, and a signal sent while the main thread sleeps runs its handler at once."""
    import os

    sig = getattr(signal, signame)
    # start_new_session: a child still running on the way out is killed as a group (SIGKILL)
    with PipedChild([sys.executable, "-c", textwrap.dedent(LIVENESS), signame], env=child_env(), cwd=str(REPO),
                    start_new_session=True) as proc:
        proc.expect("ready")
        deadline = time.monotonic() + 20
        while len(os.listdir(f"/proc/{proc.pid}/task")) < 10 and time.monotonic() < deadline:
            time.sleep(0.01)  # under load the loops may start their pool threads after "ready"
        masks = _masks(proc.pid)
        assert len(masks) >= 10, masks  # the main thread, 3 LoopThreads, their 6 pool threads
        blocking = _still_blocking(proc.pid, masks)
        assert not blocking, blocking
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # wait for the main thread to be inside the sleep syscall
            with open(f"/proc/{proc.pid}/wchan") as f:
                wchan = f.read()
            if "nanosleep" in wchan:
                break
            if wchan in ("", "0"):  # wchan not reported by this kernel: give the sleep a second
                time.sleep(1.0)
                break
            time.sleep(0.005)
        else:
            pytest.fail(f"main thread not in clock_nanosleep after 20 s (wchan {wchan!r})")
        sent = time.monotonic()
        if target == "group":
            os.killpg(proc.pid, sig)
        else:
            os.kill(proc.pid, sig)
        status, out, err = proc.finish(30)
    handled = [ln.split() for ln in out.splitlines() if ln.startswith("handled")]
    assert handled and int(handled[0][1]) == sig, (out, err)
    delay = float(handled[0][2]) - sent
    print(f"{signame} to {target}: handler ran {delay * 1000:.1f} ms after the signal")
    assert delay < 5.0  # liveness bound; bench/signal_delivery.py measures the latency
    assert status == 0
