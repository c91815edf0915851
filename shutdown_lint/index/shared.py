"""What one pool worker's project index computed, readable by the other workers of the run.

Every forked worker has its own copy of the run's ``ProjectIndex``: without sharing, each
summarised the modules its files asked about, and the modules both workers' files import
(``ray/_private/worker.py``, ``torch/distributed/...``) were summarised once per worker, and
each built the same word table of the project's import statements. Measured on the
ray+torch corpus at ``-j2``: 423 summaries instead of 370, two word tables of 0.4-0.6 CPU-s.

``SharedLog`` is an append-only log in anonymous shared memory, made by the parent before the
pool forks (so it needs no file, and it goes with the last process that maps it): a worker
appends what it computed (``put``), and a worker that misses in its own tables reads the
records the others appended since its last look (``get``). A record is ``key, pickle``;
values are unpickled only when asked for. Records are written under a lock; a worker that
cannot take it within ``LOCK_WAIT`` (a sibling killed while holding it) stops using the log
and computes for itself, as without one. A full log takes no more records.

A value that costs much and that every worker may ask for (the project's import-word table)
is *claimed* first (``claim``): the one worker that claims it computes it and appends it, a
worker that asks meanwhile waits for the record (``wait``) instead of computing it too.
Measured on the ray+torch corpus at -j2: both workers built the table (0.43 + 0.41 CPU-s).
A value that can be computed in parts (``parts``) is claimed part by part instead: the workers
that ask for it at the same time compute it together, none waits for the whole (ray+torch at
-j2: both workers met the import-word table within ~0.05 s of each other, and the one that
waited for it sat idle 0.28-0.72 s of the run's ~5-6).
"""

from __future__ import annotations

import mmap
import pickle
import struct
import time
from typing import Any, Callable, Optional

#: bytes of the log (anonymous memory: only the pages written are ever allocated; the
#: ray+torch corpus at -j2 wrote ~3 MB)
SIZE = 64 * 1024 * 1024
#: seconds a worker waits for the lock before it stops using the log
LOCK_WAIT = 1.0
#: seconds a worker waits for a value another worker claimed before it computes it itself (the
#: claimer died, or its record did not fit in the log)
CLAIM_WAIT = 20.0
#: seconds between two looks for a claimed value
_POLL = 0.002

_END = struct.Struct("<Q")  # offset 0: where the next record goes
_RECORD = struct.Struct("<II")  # key length, value length


class SharedLog:
    def __init__(self, lock: Any, size: int = SIZE) -> None:
        self._buf = mmap.mmap(-1, size)  # MAP_SHARED | MAP_ANONYMOUS: inherited by forks
        self._size = size
        self._lock = lock
        #: per process (each fork has its own copy): where this process's reading stopped,
        #: and key -> (offset, length) of the values seen so far
        self._read = _END.size
        self._where: dict[str, tuple[int, int]] = {}
        #: no more records from this process (the log is full, or the lock is stuck)
        self.full = False
        #: the lock could not be taken: this process no longer uses the log at all
        self.stuck = False

    def put(self, key: str, value: Any) -> None:
        if self.full or self.stuck:
            return
        k = key.encode("utf-8", "surrogatepass")
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        if not self._acquire():
            return
        try:
            self._append(k, data)
        finally:
            self._lock.release()

    def _append(self, k: bytes, data: bytes) -> None:
        """Append one record (the lock held), if it fits."""
        need = _RECORD.size + len(k) + len(data)
        end = max(_END.unpack_from(self._buf, 0)[0], _END.size)
        if end + need > self._size:
            self.full = True  # this process stops adding (reading goes on)
            return
        _RECORD.pack_into(self._buf, end, len(k), len(data))
        at = end + _RECORD.size
        self._buf[at:at + len(k)] = k
        self._buf[at + len(k):end + need] = data
        _END.pack_into(self._buf, 0, end + need)  # last: a reader sees whole records only

    def claim(self, key: str) -> bool:
        """True for the first process of the run that claims ``key`` (it computes the value
        and ``put``s it); False when another one did. True also when the log cannot be used
        (stuck or full): then every process computes for itself."""
        if self.full or self.stuck or self._buf.closed:
            return True
        if not self._acquire():
            return True
        try:
            self._scan()
            if "claim:" + key in self._where:
                return False
            self._append(("claim:" + key).encode("utf-8", "surrogatepass"), b"")  # no room: nobody waits
            return True
        finally:
            self._lock.release()

    def wait(self, key: str, timeout: Optional[float] = None) -> Optional[Any]:
        """The value of ``key`` that another process claimed, once it is in the log; None after
        ``timeout`` seconds (``CLAIM_WAIT``) or when the log cannot be read."""
        deadline = time.monotonic() + (CLAIM_WAIT if timeout is None else timeout)
        while True:
            found = self.get(key)
            if found is not None or self.stuck or self._buf.closed or time.monotonic() >= deadline:
                return found
            time.sleep(_POLL)

    def parts(self, key: str, n: int, compute: Callable[[int], Any]) -> list:
        """``[compute(0), ..., compute(n - 1)]``, each part computed once in the run: by the
        first process that claims it (``claim``), read from the log by the others. A process
        that asks while another is computing goes on with the parts nobody has claimed yet,
        and then waits only for the parts still being computed elsewhere: a value split in
        parts is computed by every process that needs it at the same time, together, where a
        value claimed whole leaves the others waiting until it is done. ``compute`` returns
        values that are not None (None is the log's "not there"). A part whose claimer gave
        nothing (it died, its record did not fit, the log cannot be used) is computed here."""
        out: list = [None] * n
        elsewhere = []
        for i in range(n):
            k = f"{key}:{i}"
            found = self.get(k)
            if found is None:
                if not self.claim(k):
                    elsewhere.append(i)  # being computed by another process: later
                    continue
                found = compute(i)
                self.put(k, found)
            out[i] = found
        for i in elsewhere:
            found = self.wait(f"{key}:{i}")
            out[i] = compute(i) if found is None else found
        return out

    def get(self, key: str) -> Optional[Any]:
        where = self._where.get(key)
        if where is None:
            self._catch_up()
            where = self._where.get(key)
            if where is None:
                return None
        at, n = where
        return pickle.loads(self._buf[at:at + n])

    def _catch_up(self) -> None:
        if self.stuck or self._buf.closed or not self._acquire():
            return
        try:
            self._scan()
        finally:
            self._lock.release()

    def _scan(self) -> None:
        """Index the records appended since this process's last look (the lock held)."""
        end = _END.unpack_from(self._buf, 0)[0]
        at = self._read
        while at < end:
            klen, vlen = _RECORD.unpack_from(self._buf, at)
            start = at + _RECORD.size
            key = self._buf[start:start + klen].decode("utf-8", "surrogatepass")
            self._where.setdefault(key, (start + klen, vlen))
            at = start + klen + vlen
        self._read = at

    def _acquire(self) -> bool:
        if self._lock.acquire(timeout=LOCK_WAIT):
            return True
        self.stuck = True
        return False

    def close(self) -> None:
        self._buf.close()
