"""Startup hook for a ``.pth`` file: enables the watchdog when ``RUNTIME_GUARD=1``.

Cheap when disabled: only ``os`` is imported. Intended .pth line::

    import os; os.environ.get("RUNTIME_GUARD", "0") not in ("", "0") and __import__("runtime_guard._pth_hook")
"""
import os

if os.environ.get("RUNTIME_GUARD", "").strip().lower() in ("1", "true", "yes", "on"):
    try:
        from runtime_guard import install_from_env

        install_from_env()
    except Exception:
        pass
