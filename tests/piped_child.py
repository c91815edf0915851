"""A child process with piped output, read line by line and then to its end with nothing lost.

The pattern this replaces, ``proc.stdout.readline()`` then ``proc.communicate()``, loses output:
the buffered ``readline`` reads the pipe in blocks, so a line the child wrote together with the
one asked for (one write, or two that arrived before the parent read) sits in Python's buffer,
and ``communicate`` reads the raw pipe after it, never that buffer (test_shd201_sys_exit failed
so under load: 86981dc). Here the lines are read from the pipe's file descriptor one byte at a
time, never past the newline, so ``finish`` (``communicate``) gets everything after them.
Stderr, when piped, is read meanwhile (a child that fills it before its ready line would block)
and comes back whole from ``finish``. Pipes are binary underneath; what comes back is text, as
``text=True`` gives it (decoded, ``\\r\\n`` and ``\\r`` made ``\\n``).

Use it as a context manager: on the way out a child still running is killed (its process group,
where it was started with ``start_new_session=True``), reaped and its pipes closed, on every path.
Importable as ``piped_child`` from any test folder: tests/conftest.py puts tests/ on sys.path.
"""
from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from typing import Any, Optional, Sequence, Tuple

READY_S = 120.0  # default bound on waiting for one line (the old readline had none: pytest-timeout)
REAP_S = 10.0  # after SIGKILL, the bound on the pipes' end and the exit status


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


class PipedChild:
    """``subprocess.Popen(args, stdout=PIPE, stderr=stderr, **popen_kw)``, read without loss."""

    def __init__(self, args: Sequence[Any], *, stderr: Any = subprocess.PIPE, **popen_kw: Any) -> None:
        self._group = bool(popen_kw.get("start_new_session"))
        self.proc = subprocess.Popen([str(a) for a in args], stdout=subprocess.PIPE, stderr=stderr, **popen_kw)
        self._err = bytearray()  # stderr read while waiting for a line; ``finish`` returns it first
        self._out_ended = False
        self._line = bytearray()  # the part of a line read when ``readline`` timed out: the next one goes on
        self._sel = selectors.DefaultSelector()
        self._sel.register(self.proc.stdout.fileno(), selectors.EVENT_READ, "out")  # type: ignore[union-attr]
        if self.proc.stderr is not None:
            self._sel.register(self.proc.stderr.fileno(), selectors.EVENT_READ, "err")

    @property
    def pid(self) -> int:
        return self.proc.pid

    def poll(self) -> Optional[int]:
        return self.proc.poll()

    def send_signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def readline(self, timeout: float = READY_S) -> str:
        """The next line of stdout, with its newline; '' (or the last unterminated part) once stdout
        ends. Raises ``subprocess.TimeoutExpired`` (``output``: the part read, ``stderr``: what
        stderr held) when no whole line came within ``timeout`` s; the part is kept, for the next
        ``readline`` or ``finish``."""
        line = self._line
        end = time.monotonic() + timeout
        while not self._out_ended:
            left = end - time.monotonic()
            if left <= 0:
                raise subprocess.TimeoutExpired(self.proc.args, timeout, bytes(line), bytes(self._err))
            for key, _ in self._sel.select(left):
                if key.data == "err":
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        self._err += chunk
                    else:
                        self._sel.unregister(key.fd)
                    continue
                byte = os.read(key.fd, 1)
                if not byte:
                    self._sel.unregister(key.fd)  # stdout ended
                    self._out_ended = True
                    break
                line += byte
                if byte == b"\n":
                    break
            if line.endswith(b"\n"):
                break
        self._line = bytearray()
        return _text(bytes(line))

    def expect(self, *lines: str, timeout: float = READY_S) -> None:
        """The next lines of stdout, stripped, are ``lines``, in order (each within ``timeout`` s);
        otherwise an AssertionError with what came and the child's stderr."""
        for want in lines:
            try:
                line = self.readline(timeout).strip()
            except subprocess.TimeoutExpired as e:
                line = f"<no line in {timeout} s; read {_text(e.output)!r}>"
            if line != want:
                raise AssertionError((line, want, self.stderr_for_failure()))

    def finish(self, timeout: float) -> Tuple[int, str, str]:
        """Wait up to ``timeout`` s for the child's end, reading both pipes meanwhile: (exit status,
        the rest of stdout, all of stderr). Raises ``subprocess.TimeoutExpired`` if it still runs;
        nothing read is lost then: a later ``finish`` returns all of it."""
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, _text(bytes(self._line) + (out or b"")), _text(bytes(self._err) + (err or b""))

    def finish_or_kill(self, timeout: float, *, reap: float = REAP_S) -> Tuple[bool, int, str, str]:
        """``finish(timeout)``; a child still running then is killed and reaped within ``reap`` s.
        (killed, exit status, rest of stdout, stderr)."""
        try:
            return (False, *self.finish(timeout))
        except subprocess.TimeoutExpired:
            self.kill()
            return (True, *self.finish(reap))

    def kill(self) -> None:
        """SIGKILL to the child (to its process group, where it leads a new session)."""
        try:
            if self._group:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except ProcessLookupError:
            pass

    def stderr_for_failure(self) -> str:
        """For an assertion's message: the child's stderr, all of it (a child still running is
        killed first; what came, if its pipe does not end within ``REAP_S`` s)."""
        try:
            if self.proc.poll() is None:
                self.kill()
            return self.finish(REAP_S)[2]
        except subprocess.TimeoutExpired:
            return _text(bytes(self._err))

    def close(self) -> None:
        """Kill the child if it still runs, reap it, close its pipes."""
        try:
            if self.proc.poll() is None:
                self.kill()
            try:
                self.proc.communicate(timeout=REAP_S)
            except subprocess.TimeoutExpired:  # a grandchild holds the pipes open
                pass
            for pipe in (self.proc.stdout, self.proc.stderr):
                if pipe is not None:
                    pipe.close()
            self.proc.wait(timeout=REAP_S)
        finally:
            self._sel.close()

    def __enter__(self) -> "PipedChild":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
