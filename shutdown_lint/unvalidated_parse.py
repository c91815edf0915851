"""``libcst.parse_module`` without libcst's per-node validation, for the calling thread's parse only.

Why: every libcst node validates itself on construction (``CSTNode.__post_init__`` calls
``_validate``), ~30% of a parse. That check guards trees that code assembles by hand; a tree
the native parser built from source is valid by construction (the same tree either way on
every file rt, ref and c28 parse; tests/engine/test_unvalidated_parse.py). So the nodes built
while the current thread is inside ``parse_module`` below skip it; every other thread, and the
same thread before and after (fixes build nodes with constructors and ``with_changes``),
validates as before.

How: while at least one parse runs, ``CSTNode.__post_init__`` is ``_validate_unless_parsing``,
which reads a context variable: each thread has its own context, so the flag one thread sets
is not seen by another (per node ~270 instructions, 1.3% of a parse; a ``get_ident()`` set
lookup costs 2.5 times that, validation ~10 times). When no parse runs it is libcst's own function again: validation outside a parse costs exactly
what it did.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Callable

from .lazy_libcst import libcst as cst

#: libcst's own ``CSTNode.__post_init__``, read when the first parse installs the switch (importing
#: this module does not import libcst: ``lazy_libcst``)
_original_post_init: Callable[[cst.CSTNode], None]
#: True in a thread (context) while it is inside ``parse_module``
_parsing: ContextVar[bool] = ContextVar("shutdown_lint_parsing", default=False)
_lock = threading.Lock()
#: parses running in the process (all threads); the switch is installed while it is above 0
_parses = 0


def _validate_unless_parsing(self: cst.CSTNode) -> None:
    if not _parsing.get():
        _original_post_init(self)


def parse_module(source: bytes | str) -> cst.Module:
    """``libcst.parse_module(source)``; the nodes this thread builds meanwhile are not validated."""
    global _parses, _original_post_init
    with _lock:
        if _parses == 0:
            _original_post_init = cst.CSTNode.__post_init__
            cst.CSTNode.__post_init__ = _validate_unless_parsing  # type: ignore[method-assign]
        _parses += 1
    token = _parsing.set(True)
    try:
        return cst.parse_module(source)
    finally:
        _parsing.reset(token)
        with _lock:
            _parses -= 1
            if _parses == 0:
                cst.CSTNode.__post_init__ = _original_post_init  # type: ignore[method-assign]
