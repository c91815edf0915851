"""Startup hook behind ``runtime_guard-autoload.pth``: ``RUNTIME_GUARD=1 python app.py`` watches every loop.

Installing the project puts ``runtime_guard-autoload.pth`` (source: ``runtime_guard/data/``) at the top
of site-packages. Python's ``site`` module runs its single line at every interpreter start::

    import os; any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on") for v in ("RUNTIME_GUARD", "RUNTIME_GUARD_EXIT_REPORT")) and __import__("runtime_guard._pth_hook")

(it also checks ``RUNTIME_GUARD_EXIT_REPORT``), so when both variables are unset or false nothing but
``os`` (already loaded by ``site``) is touched. ``RUNTIME_GUARD_EXIT_REPORT=1`` installs the exit
report (``runtime_guard.exit_report``; JSON to ``RUNTIME_GUARD_EXIT_REPORT_FILE`` if set), on its own
or next to the watchdog.
When it is set, this module installs the loop-stall watchdog from the environment
(``RUNTIME_GUARD_THRESHOLD``, ``RUNTIME_GUARD_REPORT_FILE``, ...). It never raises: an exception in
a .pth line would print a traceback at every interpreter start.
"""
import os

PTH_NAME = "runtime_guard-autoload.pth"

if os.environ.get("RUNTIME_GUARD", "").strip().lower() in ("1", "true", "yes", "on"):
    try:
        from runtime_guard import install_from_env

        install_from_env()
    except Exception:
        pass

if os.environ.get("RUNTIME_GUARD_EXIT_REPORT", "").strip().lower() in ("1", "true", "yes", "on"):
    try:
        from runtime_guard.exit_report import install_from_env as _install_exit_report

        _install_exit_report()
    except Exception:
        pass
