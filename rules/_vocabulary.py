"""Shared, documented vocabularies that rules use when they cannot resolve what a callee
does. Each is the default of a configurable rule option; keep entries lower-case words
(matched against identifier words) or dotted qualified names, as the comment says.

Rules append their own sections here; keep each section's name prefixed by its purpose.
"""

from __future__ import annotations

import re

#: Words in a coroutine's name, or in the names it calls, that mean it owns a resource
#: whose cleanup must run (SHD101, SHD404).
RESOURCE_WORDS = (
    "sandbox", "trial", "session", "container", "environment", "env", "pod",
    "connection", "client", "lease", "slot",
)

_WORD_SPLIT = re.compile(r"[_\W]+|(?<=[a-z0-9])(?=[A-Z])")


def identifier_words(name: str) -> list[str]:
    """``createSandboxSession`` / ``create_sandbox_session`` -> ['create', 'sandbox', 'session']."""
    return [w.lower() for w in _WORD_SPLIT.split(name) if w]


#: ``mentions``' memo: an identifier's words (the same names are asked again and again: a project's
#: function names, for each cleanup word list, ~23,000 times over ray+torch); cleared when full
_WORDS_OF: dict[str, frozenset[str]] = {}


def mentions(name: str, words) -> bool:
    """True when one of ``words`` is a word of identifier ``name`` (``make_env`` matches
    ``env``; ``environ`` does not)."""
    ws = _WORDS_OF.get(name)
    if ws is None:
        if len(_WORDS_OF) >= 50_000:
            _WORDS_OF.clear()
        ws = _WORDS_OF[name] = frozenset(identifier_words(name))
    return not ws.isdisjoint(words)

# ---------------------------------------------------------------- Ray cancellation (SHD403, SHD501)
#: Calls that ask a Ray task to stop (qualified names).
RAY_CANCEL_CALLS = ("ray.cancel", "runtime_guard.ray.cancel_and_wait")
#: Calls that wait, bounded, for Ray work to finish (its cleanup included). ``ray.get`` and
#: ``ray.wait`` count only with a ``timeout``; the runtime_guard helpers always wait.
RAY_BOUNDED_WAIT_CALLS = ("ray.wait", "ray.get")
RAY_GUARD_WAIT_CALLS = ("runtime_guard.ray.cancel_and_wait", "runtime_guard.ray.interruptible_get",
                        "runtime_guard.ray.wait_for_cleanup")

# ---------------------------------------------------------------- teardown paths (SHD502, SHD503)
#: Words in a function or method name that make it a cleanup path (``close``, ``_shutdown_pool``,
#: ``__exit__``, ``on_teardown``): resources released there count as released.
CLEANUP_WORDS = (
    "close", "aclose", "shutdown", "cleanup", "clean", "stop", "teardown", "exit", "aexit", "del",
    "terminate", "dispose", "release", "finalize", "destroy", "kill", "quit", "atexit", "finish",
)
