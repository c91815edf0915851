"""runtime_guard: small, production-safe helpers against asyncio/Ray/PyTorch shutdown hazards.

Importing this package is cheap: it imports neither ray nor torch, and the helpers are loaded on
first use. ``runtime_guard.ray`` and ``runtime_guard.torch`` are reachable as attributes (imported
lazily; they need the ``ray`` / ``torch`` extras). See docs/runtime_guard.md.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False  # typing is not imported at run time: ~3 ms of every start-up with the guard on
if TYPE_CHECKING:
    from typing import Any

# the same version as shutdown_lint (one repository, two distributions; a test keeps them equal)
__version__ = "0.1.0"

__all__ = [
    "supervise", "set_default_policy", "get_default_policy",
    "hard_exit", "sigterm_as_keyboard_interrupt", "on_interrupt", "shutdown_executor",
    "watch_loop", "install_watchdog", "install_from_env", "StallReport", "stall_summary",
    "cancel_and_wait", "LoopThread", "stop_loop_threads",
    "ray", "torch", "leases",
    "terminate_process_groups",
]

_LAZY = {
    "supervise": ("tasks", "supervise"),
    "set_default_policy": ("tasks", "set_default_policy"),
    "get_default_policy": ("tasks", "get_default_policy"),
    "hard_exit": ("exit", "hard_exit"),
    "sigterm_as_keyboard_interrupt": ("signals", "sigterm_as_keyboard_interrupt"),
    "on_interrupt": ("interrupt", "on_interrupt"),
    "shutdown_executor": ("executors", "shutdown_executor"),
    "watch_loop": ("watchdog", "watch_loop"),
    "install_watchdog": ("watchdog", "install"),
    "StallReport": ("watchdog", "StallReport"),
    "stall_summary": ("watchdog", "summary"),
    "cancel_and_wait": ("tasks", "cancel_and_wait"),
    "LoopThread": ("loop_thread", "LoopThread"),
    "stop_loop_threads": ("loop_thread", "stop_loop_threads"),
    "terminate_process_groups": ("processes", "terminate_process_groups"),
    "install_exit_report": ("exit_report", "install"),
}

if TYPE_CHECKING:  # pragma: no cover
    from . import leases, ray, torch
    from .executors import shutdown_executor
    from .exit import hard_exit
    from .interrupt import on_interrupt
    from .processes import terminate_process_groups
    from .signals import sigterm_as_keyboard_interrupt
    from .tasks import get_default_policy, set_default_policy, supervise
    from .tasks import cancel_and_wait
    from .loop_thread import LoopThread, stop_loop_threads
    from .watchdog import StallReport, watch_loop
    from .watchdog import install as install_watchdog
    from .watchdog import summary as stall_summary

_TRUE = ("1", "true", "yes", "on")

# hard_exit must not run a parent's atexit handlers in a forked child: note forks from the
# moment runtime_guard is imported (the exit module itself loads lazily).
_forked_child = False


def _note_fork() -> None:
    global _forked_child
    _forked_child = True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_note_fork)


def install_from_env() -> bool:
    """Install the loop-stall watchdog for every loop if ``$RUNTIME_GUARD`` is 1/true/yes/on.

    Reads ``RUNTIME_GUARD_THRESHOLD`` (seconds, default 0.1), ``RUNTIME_GUARD_REPORT_FILE`` (JSON
    lines) and ``RUNTIME_GUARD_HARD_THRESHOLD`` (faulthandler layer, 0 = off). Returns whether it
    installed. Never raises.
    """
    if os.environ.get("RUNTIME_GUARD", "").strip().lower() not in _TRUE:
        return False
    try:
        from .watchdog import install

        install()
        return True
    except Exception:
        return False


def __getattr__(name: str) -> Any:
    import importlib

    if name in ("ray", "torch", "leases"):
        return importlib.import_module(f"{__name__}.{name}")
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{target[0]}"), target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
