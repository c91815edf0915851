"""Startup hook behind ``runtime_guard-autoload.pth``: ``RUNTIME_GUARD=1 python app.py`` watches every loop.

Installing the project puts ``runtime_guard-autoload.pth`` (source: ``runtime_guard/data/``) at the top
of site-packages. Python's ``site`` module runs its single line at every interpreter start::

    import os; os.environ.get("RUNTIME_GUARD", "").strip().lower() in ("1", "true", "yes", "on") and __import__("runtime_guard._pth_hook")

so when the variable is unset or false nothing but ``os`` (already loaded by ``site``) is touched.
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
