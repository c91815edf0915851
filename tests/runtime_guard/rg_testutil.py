"""Helpers for runtime_guard tests: run real Python subprocesses with the repo on sys.path."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, Dict, List, Optional


REPO = Path(__file__).resolve().parents[2]
SCRIPTS = Path(__file__).resolve().parent / "scripts"


def child_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("RUNTIME_GUARD", None)
    env.update(extra or {})
    return env


def run_code(code: str, *, timeout: float = 60, env: Optional[Dict[str, str]] = None,
             args: List[str] = ()) -> subprocess.CompletedProcess:  # type: ignore[assignment]
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          timeout=timeout, env=child_env(env), cwd=str(REPO))


def popen_code(code: str, *, env: Optional[Dict[str, str]] = None, **kw: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=child_env(env), cwd=str(REPO), **kw)


def wait_for_line(proc: subprocess.Popen, needle: str, timeout: float = 60) -> List[str]:
    """Read lines until one contains needle (the child prints it when ready).

    Reads the pipe's file descriptor one byte at a time: a buffered ``readline`` may pull the
    NEXT lines into Python's buffer, where ``select`` no longer sees them (so we would wait for
    output that already arrived) and ``communicate`` never returns them.
    """
    import selectors
    import time

    fd = proc.stdout.fileno()  # type: ignore[union-attr]
    lines: List[str] = []
    current = bytearray()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not sel.select(timeout=0.5):
            if proc.poll() is not None:
                break
            continue
        byte = os.read(fd, 1)
        if not byte:
            break
        current += byte
        if byte == b"\n":
            line = current.decode(errors="replace")
            current.clear()
            lines.append(line)
            if needle in line:
                return lines
    raise AssertionError(f"{needle!r} not seen; output so far:\n{''.join(lines)}{current.decode(errors='replace')}")


def _wait_listening(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    """Until a socket listens on ``port`` (read from /proc/net/tcp: connecting would talk to the store)."""
    import time

    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            try:
                with open(table) as f:
                    rows = f.read().splitlines()[1:]
            except OSError:
                continue
            for row in rows:
                fields = row.split()
                if fields[1].rsplit(":", 1)[1] == "%04X" % port and fields[3] == "0A":  # 0A: LISTEN
                    return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on {port}")


def sigterm_in_rendezvous(proc: subprocess.Popen) -> str:
    """SIGTERM to a child that printed ``ready <port>`` and then waits, as rank 0 of 2, in a gloo
    rendezvous on that port (a C++ call: no Python handler can run there). Sent once the
    rendezvous's TCPStore listens: its constructor listens, then waits for the peer, in one C++
    call, so the main thread is in C by then. Everything the child printed (liveness bounds only)."""
    import signal

    try:
        lines = wait_for_line(proc, "ready", timeout=60)
        _wait_listening(int(lines[-1].split()[1]), proc)
        proc.send_signal(signal.SIGTERM)
        return "".join(lines) + proc.communicate(timeout=60)[0]
    finally:
        if proc.poll() is None:
            proc.kill()


def signal_when_ready(code: str, ready: str, signum: int, timeout: float = 60) -> "tuple[int, str]":
    """Start ``code`` in a child, send it ``signum`` once it prints ``ready``, and return its exit
    status and output (the child is killed if it outlives ``timeout``)."""
    proc = popen_code(code)
    try:
        wait_for_line(proc, ready)
        proc.send_signal(signum)
        out = proc.communicate(timeout=timeout)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out


def storm(code: str, signum: int, *, storm_s: float, liveness_s: float) -> "tuple[Optional[int], float, int, str]":
    """Start ``code`` in a child (it prints ``ready``), then send it ``signum`` back to back until it
    exits or ``storm_s`` runs out, and wait for its exit until ``liveness_s`` after the storm's
    start (killed past it: status -9). Returns its exit status, the seconds from the storm's start
    to its exit, the number of signals sent, and everything it printed (stdout and stderr)."""
    import threading
    import time

    p = popen_code(code)
    chunks: List[str] = []
    reader = threading.Thread(target=lambda: chunks.append(p.stdout.read()), daemon=True)  # type: ignore[union-attr]
    try:
        head = "".join(wait_for_line(p, "ready"))
        reader.start()  # the child's output is read while it runs: a full pipe would block it
        t0 = time.monotonic()
        sent = 0
        while p.poll() is None and time.monotonic() - t0 < storm_s:
            try:
                os.kill(p.pid, signum)
            except ProcessLookupError:
                break
            sent += 1
        try:
            p.wait(timeout=max(0.1, liveness_s - (time.monotonic() - t0)))
        except subprocess.TimeoutExpired:
            pass  # killed below: the caller sees status -9 and took >= liveness_s
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    if reader.ident is not None:
        reader.join(10)
    return p.returncode, took, sent, head + "".join(chunks)
