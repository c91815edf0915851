"""Hard process exit that still gets the last log lines out."""
from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn

from ._threads import daemon_thread

__all__ = ["hard_exit", "flush_all"]

# Bound on flushing: a handler lock held by a wedged thread must not keep us alive.
_FLUSH_TIMEOUT = 2.0


def flush_all() -> None:
    """Flush stdio and every logging handler, swallowing every error."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:
            pass
    try:
        loggers = [logging.getLogger()]
        loggers += [lg for lg in list(logging.Logger.manager.loggerDict.values()) if isinstance(lg, logging.Logger)]
    except Exception:
        loggers = []
    seen: set[int] = set()
    for lg in loggers:
        for handler in list(getattr(lg, "handlers", ())):
            if id(handler) in seen:
                continue
            seen.add(id(handler))
            try:
                handler.flush()
            except Exception:
                pass


def hard_exit(code: "int | str | None" = 1) -> NoReturn:
    """Flush stdio and logging, then ``os._exit(code)``.

    ``code`` means what it means to ``sys.exit``: ``None`` is status 0, an integer is the
    status, anything else is printed to stderr and gives status 1 (so ``sys.exit(x)`` can be
    replaced by ``hard_exit(x)`` without changing what the caller of the process sees).

    Safe from any thread, task, signal handler or done-callback: it never runs atexit hooks,
    never joins threads and never waits more than ~2 s on a handler lock.
    """
    if code is None:
        status = 0
    elif isinstance(code, int) and not isinstance(code, bool):
        status = code & 0xFF
    else:
        status = 1
        try:
            print(code, file=sys.stderr)
        except Exception:
            pass
    try:
        flusher = daemon_thread(flush_all, "runtime_guard-flush")
        flusher.start()
        flusher.join(_FLUSH_TIMEOUT)
    except Exception:
        # No threads available (interpreter shutting down, after fork...): flush inline.
        flush_all()
    os._exit(status)
