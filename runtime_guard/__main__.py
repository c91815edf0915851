"""``python -m runtime_guard``: run a program with the loop-stall watchdog on every event loop.

Usage (like ``python -m cProfile``)::

    python -m runtime_guard [--threshold S] [--json FILE] script.py [args...]
    python -m runtime_guard [--threshold S] [--json FILE] -m package.module [args...]
    python -m runtime_guard --exit-report [--json FILE] (script.py | -m module) [args...]

The program sees the ``sys.argv`` and ``__main__`` it would see when started directly, and its exit
status is passed through. Every loop it creates (``asyncio.run``, loops in threads, uvloop) is
watched; a summary is printed to stderr at exit. This works whatever way the package was installed,
unlike ``RUNTIME_GUARD=1``, which needs ``runtime_guard-autoload.pth`` in site-packages.

``--exit-report`` runs the exit report (``runtime_guard.exit_report``) instead of the watchdog: when
the program ends (return, exception, SIGINT, SIGTERM) it prints what it left running (pending tasks,
threads, child processes, executors, process groups, Ray work), each with the line that started it
and the rule that finds it statically; nothing when nothing is left. ``--json FILE`` then writes the
report as JSON (always).

Exit status 2 with a one-line message for bad usage, a script that does not exist or a module that
cannot be found.

Signals, threads, children: those of ``runtime_guard.watchdog.install`` (no handler, no mask; one
monitor thread and faulthandler's timer thread); the program runs in this process (no child).
With ``--exit-report``: those of ``runtime_guard.exit_report.install`` (a SIGTERM handler only over
the default action, which reports and dies of SIGTERM again; no thread; nothing in forked children).
"""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

PROG = "python -m runtime_guard"
USAGE = f"usage: {PROG} [--threshold S | --exit-report] [--json FILE] (script.py | -m module) [args...]"
HELP = f"""{USAGE}

Run a Python program with the runtime_guard loop-stall watchdog on every event loop it creates.

options:
  --threshold S   report a loop blocked for longer than S seconds (default: $RUNTIME_GUARD_THRESHOLD or 0.1)
  --json FILE     also append every stall as a JSON line to FILE (with --exit-report: write the report there)
  --exit-report   instead of the watchdog: at exit, print what the program left running (tasks, threads,
                  child processes, executors, process groups, Ray work) with the lines that started them
  -m module       run a library module as a script, like python -m
  -h, --help      show this help and exit
"""


class _Usage(Exception):
    pass


_flags: "set[str]" = set()  # flags without a value seen by _parse (--exit-report)


def _parse(argv: List[str]) -> "tuple[Optional[float], Optional[str], Optional[str], List[str]]":
    """Options up to the script or ``-m module``; everything after belongs to the program."""
    threshold: Optional[float] = None
    json_file: Optional[str] = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, inline = arg.partition("=")
        if name in ("--threshold", "--json") or arg == "-m":
            if eq:
                value = inline
            elif i + 1 < len(argv):
                i += 1
                value = argv[i]
            else:
                raise _Usage(f"{arg} needs a value")
            if arg == "-m":
                return threshold, json_file, value, argv[i + 1:]
            if name == "--json":
                json_file = value
            else:
                try:
                    threshold = float(value)
                except ValueError:
                    raise _Usage(f"--threshold expects seconds, got {value!r}") from None
                if not threshold > 0:
                    raise _Usage(f"--threshold must be > 0, got {value!r}")
        elif arg == "--exit-report":
            _flags.add("exit-report")
        elif arg == "--":
            return threshold, json_file, None, argv[i + 1:]
        elif arg.startswith("-m") and len(arg) > 2:  # -mpkg.mod, as python accepts
            return threshold, json_file, arg[2:], argv[i + 1:]
        elif arg.startswith("-") and arg != "-":
            raise _Usage(f"unknown option {arg}")
        else:
            return threshold, json_file, None, argv[i:]
        i += 1
    return threshold, json_file, None, []


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in ("-h", "--help"):
        sys.stdout.write(HELP)
        return 0
    _flags.clear()
    try:
        threshold, json_file, module, rest = _parse(args)
        if module is None and not rest:
            raise _Usage("no script or -m module given")
        exit_report = "exit-report" in _flags
        if exit_report and threshold is not None:
            raise _Usage("--exit-report runs instead of the watchdog: drop --threshold")
    except _Usage as e:
        print(f"{USAGE}\n{PROG}: error: {e}", file=sys.stderr)
        return 2

    if module is None:
        script = rest[0]
        if not os.path.isfile(script):
            why = "is a directory" if os.path.isdir(script) else "no such file"
            print(f"{PROG}: error: cannot run {script!r}: {why}", file=sys.stderr)
            return 2
    else:
        import importlib.util

        try:
            found = importlib.util.find_spec(module)
        except (ImportError, ValueError) as e:  # a parent package that fails to import, "..x"
            found = None
            reason = f"{type(e).__name__}: {e}"
        else:
            reason = "no such module"
        if found is None:
            print(f"{PROG}: error: cannot run module {module!r}: {reason}", file=sys.stderr)
            return 2

    if exit_report:
        from . import exit_report as report

        report.install(json_file)
        try:
            _run(module, rest)
        except BaseException as e:
            report.note_ending(e)
            raise
        report.note_ending(None)
        return 0

    from .watchdog import install, summary

    install(threshold, report_file=json_file)
    _report_clean_exit_at_exit(summary)
    _run(module, rest)
    return 0


#: The program's module globals, kept until the process ends as ``python script.py`` keeps
#: ``__main__``'s (runpy hands back a copy; dropping it would collect the program's objects
#: before its atexit handlers and the exit report run).
_program_globals: Optional[dict] = None


def _run(module: Optional[str], rest: List[str]) -> None:
    global _program_globals
    import runpy

    if module is None:
        script = rest[0]
        # what `python script.py` does: the script's directory first on sys.path, argv[0] the script
        sys.argv[:] = rest
        sys.path[0] = os.path.dirname(os.path.abspath(script))
        _program_globals = runpy.run_path(script, run_name="__main__")
    else:
        # what `python -m module` does: the current directory on sys.path, argv[0] the module's file
        sys.argv[:] = [module, *rest]
        sys.path[0] = os.getcwd()
        _program_globals = runpy.run_module(module, run_name="__main__", alter_sys=True)


def _report_clean_exit_at_exit(summary) -> None:  # type: ignore[no-untyped-def]
    """The watchdog itself logs a summary at exit when there were stalls; say so when there were none,
    so a quiet run is visibly a clean one and not a guard that was never installed."""
    import atexit

    from . import watchdog

    threshold = (watchdog._config or {}).get("threshold")

    def say() -> None:
        try:
            watchdog.settle()
            if not summary()["count"]:
                print(f"runtime_guard: no event-loop stall over {threshold:g}s", file=sys.stderr)
        except Exception:
            pass

    atexit.register(say)


if __name__ == "__main__":
    sys.exit(main())
