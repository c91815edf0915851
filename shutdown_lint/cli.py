"""The ``shutdown-lint`` command.

Exit status: 0 no findings, 1 findings remain (or ``--diff`` would change files),
2 usage or configuration error, or a file that could not be analysed.

Startup is kept light: ``--version`` imports neither libcst nor rich, and a run whose
files are all cached imports no rule and no libcst (the rule catalogue comes from the
cache directory as well). Heavy modules are imported where they are needed.

A warm run (everything cached) is measured against ruff's cached run, and most of it is
interpreter start and imports. Its path imports no runner, analyzer, dataclasses, typing,
hashlib, json, pathspec or tomllib (with ``--isolated``; a config file needs tomllib);
``tests/engine/test_cache_format.py`` checks that. See docs/performance.md, "Warm run".
"""

from __future__ import annotations

import os
import sys

from . import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from typing import Any, Callable, Optional, Sequence

    from .diagnostic import FileResult

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
PROGRESS_MIN_FILES = 300


class UsageError(Exception):
    pass


def _split(values: Optional[list[str]]) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command's parser. argparse translates three of its own texts while it is built, each
    time looking for its message catalogue on disk (``gettext.find``: ~1.5M instructions each, ~1%
    of a warm run): while it is built, the catalogue is looked for once (``_OnceGettext``)."""
    import argparse

    saved = argparse._
    argparse._ = _OnceGettext()
    try:
        return _build_parser()
    finally:
        argparse._ = saved


class _OnceGettext:
    """``gettext.gettext`` (what argparse calls ``_``) for the span of one ``build_parser``: the
    translation ``gettext.dgettext`` would find for each text, found once (nothing it depends
    on, the domain, the locale's environment variables, the catalogue files, changes meanwhile)."""

    __slots__ = ("found",)

    def __init__(self) -> None:
        self.found: Optional[tuple] = None

    def __call__(self, message: str) -> str:
        if self.found is None:
            import gettext

            domain = gettext.textdomain()
            try:
                self.found = (gettext.translation(domain, gettext.bindtextdomain(domain)),)
            except OSError:  # no catalogue: dgettext gives the text back
                self.found = (None,)
        t = self.found[0]
        return message if t is None else t.gettext(message)


def _build_parser() -> argparse.ArgumentParser:
    import argparse

    from .output import FORMATS

    p = argparse.ArgumentParser(
        prog="shutdown-lint",
        description="Find (and fix) the code that makes asyncio + Ray + PyTorch programs hang, leak or lose "
                    "work when they stop.",
        epilog="commands:\n"
               "  check [PATH ...]  lint (the same as giving the paths alone)\n"
               "  rule CODE         a rule's documentation page (like --explain); rule --all lists them\n"
               "  map ENTRY         what a program starts and how each piece stops (see docs/map.md)\n"
               "  server            run the language server (LSP over stdio) for editors; see docs/editors.md\n"
               "                    (needs the lsp extra: pip install 'shutdown-lint[lsp]')",
        formatter_class=_metavar_check_formatter(),  # the real one is set below
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or directories (default: .); - reads stdin")
    g = p.add_argument_group("fixing")
    g.add_argument("--fix", action=argparse.BooleanOptionalAction, default=False, help="apply safe fixes")
    g.add_argument("--unsafe-fixes", action=argparse.BooleanOptionalAction, default=False,
                   help="also consider unsafe fixes (applied with --fix or --diff)")
    g.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    g.add_argument("--show-fixes", action="store_true", help="list the files fixed")
    g.add_argument("--add-noqa", action="store_true", help="add `# noqa: CODE` to every line with a finding")
    s = p.add_argument_group("rule selection")
    s.add_argument("--select", action="append", metavar="RULES", help="codes, prefixes (SHD2), names, or ALL")
    s.add_argument("--extend-select", action="append", metavar="RULES")
    s.add_argument("--ignore", action="append", metavar="RULES")
    s.add_argument("--per-file-ignores", action="append", metavar="GLOB:RULES",
                   help="e.g. 'tests/*:SHD201,SHD1' (repeatable)")
    s.add_argument("--target-version", metavar="pyXY", help="oldest Python the fixes may target")
    f = p.add_argument_group("files")
    f.add_argument("--exclude", action="append", metavar="PATTERNS", help="extra gitignore-style excludes")
    f.add_argument("--extend-exclude", action="append", metavar="PATTERNS", help=argparse.SUPPRESS)
    f.add_argument("--force-exclude", action="store_true", help="apply excludes to files named on the command line")
    f.add_argument("--no-respect-gitignore", action="store_true", help="do not read .gitignore files")
    f.add_argument("--stdin-filename", metavar="PATH", help="the name of the file read from stdin")
    f.add_argument("--config", metavar="FILE", help="pyproject.toml or shutdown-lint.toml to use")
    f.add_argument("--isolated", action="store_true", help="ignore all configuration files")
    f.add_argument("--show-settings", metavar="FILE",
                   help="print the settings that apply to FILE and where each came from")
    o = p.add_argument_group("output")
    o.add_argument("--output-format", choices=FORMATS, help="default: full on a terminal, else concise")
    o.add_argument("--statistics", action="store_true", help="count findings by rule")
    o.add_argument("--explain", metavar="RULE", help="show a rule's documentation")
    o.add_argument("--list-rules", action="store_true", help="list the rules")
    o.add_argument("-q", "--quiet", action="store_true", help="print findings only (no summary, no warnings)")
    o.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    o.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when fixes were applied")
    o.add_argument("--watch", action="store_true",
                   help="lint again whenever a file changes (with the cache); Ctrl+C ends it")
    b = p.add_argument_group("adoption")
    b.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in FILE")
    b.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE")
    r = p.add_argument_group("running")
    r.add_argument("-j", "--jobs", type=int, default=None, metavar="N", help="worker processes (default: all cores)")
    r.add_argument("--no-cache", action="store_true", help="neither read nor write the result cache")
    r.add_argument("--cache-dir", metavar="DIR", help="default: .shutdown_lint_cache in the project root")
    r.add_argument("--no-prefilter", action="store_true", help=argparse.SUPPRESS)  # for bench/
    p.add_argument("--version", action="version", version=f"shutdown-lint {__version__}")
    p.formatter_class = argparse.RawDescriptionHelpFormatter  # for --help and usage errors
    return p


#: a trailing run of paths this long is appended after parsing, not parsed (see ``_parse``)
_LONG_TAIL = 64


def _parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, without handing argparse every path of a long file list
    (``_split_paths``)."""
    return _split_paths(parser.parse_args, argv)


def _parse_fast(argv: list[str]) -> Optional[_Args]:
    """``_parse(build_parser(), argv)``'s answer without argparse (``_fast_parse``), or None."""
    return _split_paths(_fast_parse, argv)


def _split_paths(parse: Callable[[list[str]], Any], argv: list[str]) -> Any:
    """``parse(argv)`` for a command line that may end in a long file list (pre-commit, ``$(git
    ls-files)``: thousands; argparse spends ~1 us on each). The trailing run of arguments that do
    not start with ``-`` is split: its first argument is parsed with the options (it may be the
    value of the option just before it), the others can only be paths (no option takes more than
    one value) and are appended to ``paths`` as they are. ``parse`` may answer None (not taken on)."""
    start = _trailing_run(argv)
    if len(argv) - start <= _LONG_TAIL:
        return parse(argv)
    args = parse(argv[:start + 1])
    if args is not None:
        args.paths = [*(args.paths or []), *argv[start + 1:]]
    return args


#: the options ``_fast_parse`` takes: option -> (dest, kind); the same as ``build_parser``'s
#: (``tests/engine/test_warm_startup.py`` compares them). Kinds: "true" (store_true), "yes"/"no"
#: (BooleanOptionalAction), "store", "append", "int" (type=int), "format" (choices=FORMATS)
_FAST_OPTIONS = {
    "--fix": ("fix", "yes"), "--no-fix": ("fix", "no"),
    "--unsafe-fixes": ("unsafe_fixes", "yes"), "--no-unsafe-fixes": ("unsafe_fixes", "no"),
    "--diff": ("diff", "true"), "--show-fixes": ("show_fixes", "true"), "--add-noqa": ("add_noqa", "true"),
    "--select": ("select", "append"), "--extend-select": ("extend_select", "append"),
    "--ignore": ("ignore", "append"), "--per-file-ignores": ("per_file_ignores", "append"),
    "--target-version": ("target_version", "store"),
    "--exclude": ("exclude", "append"), "--extend-exclude": ("extend_exclude", "append"),
    "--force-exclude": ("force_exclude", "true"), "--no-respect-gitignore": ("no_respect_gitignore", "true"),
    "--stdin-filename": ("stdin_filename", "store"), "--config": ("config", "store"),
    "--isolated": ("isolated", "true"), "--show-settings": ("show_settings", "store"),
    "--output-format": ("output_format", "format"), "--statistics": ("statistics", "true"),
    "--explain": ("explain", "store"), "--list-rules": ("list_rules", "true"),
    "-q": ("quiet", "true"), "--quiet": ("quiet", "true"), "--exit-zero": ("exit_zero", "true"),
    "--exit-non-zero-on-fix": ("exit_non_zero_on_fix", "true"), "--watch": ("watch", "true"),
    "--baseline": ("baseline", "store"), "--write-baseline": ("write_baseline", "store"),
    "-j": ("jobs", "int"), "--jobs": ("jobs", "int"), "--no-cache": ("no_cache", "true"),
    "--cache-dir": ("cache_dir", "store"), "--no-prefilter": ("no_prefilter", "true"),
}
_FAST_FLAGS = ("true", "yes", "no")


class _Args:
    """``argparse.Namespace``'s stand-in for a command line ``_fast_parse`` read: the same
    attributes, equal to a Namespace with the same ones."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return vars(self) == getattr(other, "__dict__", None)

    def __repr__(self) -> str:
        return "_Args(" + ", ".join(f"{k}={v!r}" for k, v in vars(self).items()) + ")"


def _fast_parse(argv: list[str]) -> Optional[_Args]:
    """What ``build_parser().parse_args(argv)`` returns, for a plain command line, without
    importing argparse or building the parser (~5% of a warm run): options spelled whole, each
    value its own argument not starting with ``-`` (a valid one: an int for --jobs, a format),
    the paths one run of arguments not starting with ``-``. None for anything else (help,
    --version, ``--opt=value``, ``-j2``, abbreviations, ``--``, ``-``, paths in two runs, an
    error): argparse then parses it, and says what is wrong."""
    options = _FAST_OPTIONS
    values: dict = {"paths": []}
    for dest, kind in options.values():
        values[dest] = False if kind in _FAST_FLAGS else None
    paths_at = -1  # where the run of paths starts
    i, n = 0, len(argv)
    while i < n:
        arg = argv[i]
        if not arg.startswith("-"):
            if paths_at >= 0:
                return None  # a second run of paths: argparse has its own view of it
            paths_at = i
            while i < n and not argv[i].startswith("-"):
                i += 1
            values["paths"] = argv[paths_at:i]
            continue
        spec = options.get(arg)
        if spec is None:
            return None
        dest, kind = spec
        if kind in _FAST_FLAGS:
            values[dest] = kind != "no"
            i += 1
            continue
        if i + 1 >= n or argv[i + 1].startswith("-"):
            return None
        value = argv[i + 1]
        if kind == "store":
            values[dest] = value
        elif kind == "append":
            values[dest] = [*(values[dest] or ()), value]
        elif kind == "int":
            if not (value.isascii() and value.isdigit()):
                return None
            values[dest] = int(value)
        else:
            from .output import FORMATS

            if value not in FORMATS:
                return None
            values[dest] = value
        i += 2
    args = _Args()
    args.__dict__.update(values)
    return args


def _trailing_run(argv: list[str]) -> int:
    """The index where the trailing run of arguments not starting with ``-`` begins. Found
    in the arguments joined by NUL (which no command-line argument holds): a Python loop
    over thousands of paths costs a warm run ~2 ms."""
    joined = "\0".join(argv)
    if joined.count("\0") == len(argv) - 1:  # else an argument holds a NUL: count below would be off
        last = joined.rfind("\0-")
        if last >= 0:
            return joined.count("\0", 0, last + 1) + 1  # the option is argument number count(NUL before it)
        return 1 if argv and argv[0].startswith("-") else 0
    start = len(argv)
    while start > 0 and not argv[start - 1].startswith("-"):
        start -= 1
    return start


def _metavar_check_formatter() -> type:
    """The formatter ``add_argument`` makes to check a metavar, with a fixed width: the default
    asks the terminal's size, importing shutil (and bz2, lzma) into every run for nothing. A
    class made when a parser is built (argparse is imported only then: ``_fast_parse``)."""
    import argparse

    class _MetavarCheckFormatter(argparse.RawDescriptionHelpFormatter):
        def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                     width: Optional[int] = None) -> None:
            super().__init__(prog, indent_increment, max_help_position, 80 if width is None else width)

    return _MetavarCheckFormatter


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The command. Ctrl+C and SIGTERM stop it at once (``interrupt``): exit 130 or 143 with one
    line on stderr (``_interrupted``)."""
    from .interrupt import handling

    with handling():
        return _main_handled(argv)


#: this process is the command line's own (the console script, python -m), which exits after one
#: run, and nothing is frozen yet: the imports are frozen once made (``_load_catalogue``)
_freeze_imports = False

#: this process is the command line's own and exits after its one run (not ``--watch``, which runs
#: again): the runner may leave what it freezes frozen (``runner.Mode.own_process``)
_own_process = False


def _load_catalogue(C: Any, cache_dir: Optional[str], code_key: Optional[str]) -> list:
    """``config.load_catalogue``, with no cyclic collection while it runs: without a cached
    catalogue it imports the rules, libcst and the engines, objects that live to the exit, and
    the collector walked them ~120 times as they were made (110 gen0, 10 gen1 and a gen2
    collection: 0.03 of the 0.30 CPU-s of a run over a one-line file). In the command line's
    own process they are then frozen: no later collection walks them (as ``runner.run`` does
    before its workers fork, and ``_main_handled`` at the exit)."""
    global _freeze_imports
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        return C.load_catalogue(cache_dir, code_key)
    finally:
        if _freeze_imports:
            _freeze_imports = False  # once (``--watch`` runs again in the same process)
            gc.freeze()
        if enabled:
            gc.enable()


def _main_handled(argv: Optional[Sequence[str]]) -> int:
    global _freeze_imports, _own_process
    try:
        _freeze_imports = _own_process = argv is None
        code = _main(list(sys.argv[1:] if argv is None else argv))
        if argv is None:
            # the command line's own run (the console script, python -m): the process exits next,
            # and the collections of the interpreter's exit would walk every object once more
            # (~5 ms); frozen objects are left to the exit's plain deallocation
            import gc

            gc.freeze()
        return code
    except UsageError as e:
        print(f"shutdown-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt as e:
        return _interrupted(e)
    except BrokenPipeError:
        # the reader went away (`shutdown-lint ... | head`): stop quietly, as a killed-by-SIGPIPE
        # program would, instead of a traceback; stdout goes to /dev/null so the interpreter's
        # final flush cannot raise again
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13


def _interrupted(e: KeyboardInterrupt) -> int:
    """The one line of a stopped run (the runner has stopped its workers): the signal and, when
    the run was writing fixes, how many files were written before the stop (each of them fully
    fixed, every other file untouched)."""
    from .interrupt import exit_status, signal_name, writes_files, written

    line = f"shutdown-lint: interrupted by {signal_name(e)}"
    if writes_files():
        n = written()
        line += f"; {n} file{'' if n == 1 else 's'} fixed and written before the stop, the others untouched"
    print(line, file=sys.stderr)
    return exit_status(e)


def _main(argv: list[str]) -> int:
    if argv == ["--version"]:  # fast path: no argparse group building, no imports
        print(f"shutdown-lint {__version__}")
        return EXIT_OK
    # commands, as ruff has them; a directory with a command's name is linted as ./check, ./rule
    if argv[:1] == ["server"]:
        from .server import main as server_main

        return server_main(argv[1:])
    if argv[:1] == ["rule"]:
        return _rule_command(argv[1:])
    if argv[:1] == ["map"]:
        from .map.command import main as map_main

        return map_main(argv[1:])
    if argv[:1] == ["check"]:
        argv = argv[1:]
    elif argv and _unknown_command(argv[0]):
        raise UsageError(f"unknown command {argv[0]!r} (commands: check, rule, map, server), and no file or "
                         "directory has that name")
    args = _parse_fast(argv)
    if args is None:  # anything _fast_parse does not take on (help, errors, abbreviations, --opt=value)
        parser = build_parser()
        try:
            args = _parse(parser, argv)
        except SystemExit as e:  # argparse: --help exits 0, bad usage exits 2
            return int(e.code or 0)
    if args.watch:
        return _watch(args, argv)
    return _run_args(args)


def _run_args(args: argparse.Namespace) -> int:
    fmt = args.output_format or ("full" if sys.stdout.isatty() else "concise")

    if args.explain:
        from .explain import explain

        if not explain(args.explain, sys.stdout, fmt):
            raise UsageError(f"no rule has the code or name {args.explain!r} (see --list-rules)")
        return EXIT_OK
    if args.list_rules:
        from .explain import list_rules

        list_rules(sys.stdout, fmt)
        return EXIT_OK
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.baseline and args.write_baseline:
        raise UsageError("--baseline and --write-baseline cannot be combined")

    from . import config as C

    stdin = args.paths == ["-"] or (not args.paths and args.stdin_filename is not None)
    if "-" in args.paths and not stdin:
        raise UsageError("- (stdin) cannot be combined with other paths")
    cwd = os.getcwd()
    start = args.stdin_filename if stdin and args.stdin_filename else (args.paths[0] if args.paths and not stdin else cwd)
    try:
        cfg = C.Config(root=C.find_root_without_config(start)) if args.isolated else C.load(args.config, start)
    except C.ConfigError as e:
        raise UsageError(str(e)) from None

    use_cache = not args.no_cache and not stdin
    cache_dir = _cache_dir(args, cfg, start)
    use_cache = use_cache and cache_dir is not None
    code_key = C.code_key()  # once per run: the catalogue's and every cache index's key
    catalogue = _load_catalogue(C, cache_dir if use_cache else None, code_key)
    _check_selectors(args, catalogue)
    from .hierarchy import Overrides, Resolver, SettingsError

    # --config / --isolated / stdin: one configuration; otherwise each file its nearest one
    resolver = Resolver(cfg, Overrides.from_args(args), catalogue,
                        fixed=bool(args.config or args.isolated or stdin))
    try:
        if args.show_settings:
            return _show_settings(args, resolver)
        settings = resolver.settings(cfg.path)
    except SettingsError as e:
        raise UsageError(str(e)) from None
    # (no cache: the outcomes need no stamps, and the files' contents are not hashed)
    mode = _Mode(fix=args.fix and not args.diff, unsafe=args.unsafe_fixes, diff=args.diff,
                 edits=fmt in ("json", "sarif"), stamps=use_cache)
    if stdin:
        return _run_stdin(args, settings, mode, fmt, cfg, catalogue)
    return _run_files(args, resolver, mode, fmt, cfg, catalogue, cache_dir if use_cache else None, code_key)


#: seconds between two looks at the watched files' stamps
WATCH_INTERVAL = 0.3
#: besides ``*.py``: the files whose change changes a run's result
_WATCHED_NAMES = frozenset({"pyproject.toml", "shutdown-lint.toml", ".gitignore"})


def _watch(args: argparse.Namespace, argv: list[str]) -> int:
    """``--watch``: lint, then lint again (with the cache: only what changed is analysed) each
    time a ``*.py`` file or a configuration file under the paths changes, appears or goes. The
    stamps are polled with ``os.scandir`` (no dependency). Ctrl+C ends it: ``main`` prints one
    line and returns 130."""
    import time

    if args.paths == ["-"] or "-" in args.paths or args.stdin_filename is not None:
        raise UsageError("--watch lints files, not stdin")
    if args.diff or args.add_noqa or args.write_baseline or args.show_settings:
        raise UsageError("--watch cannot be combined with --diff, --add-noqa, --write-baseline or --show-settings")
    paths = args.paths or ["."]
    global _own_process
    _own_process = False  # runs again: each run gives the collector back as it found it
    print("Watching for file changes; Ctrl+C ends.", file=sys.stderr, flush=True)
    while True:
        try:
            _run_args(args)
        except UsageError as e:  # a configuration being edited: say so, and wait for the next change
            print(f"shutdown-lint: error: {e}", file=sys.stderr)
        sys.stdout.flush()
        seen = _stamps(paths)
        while True:
            time.sleep(WATCH_INTERVAL)
            now = _stamps(paths)
            if now != seen:
                break
        print("File change detected; linting again.", file=sys.stderr, flush=True)


def _stamps(paths: list[str]) -> dict[str, tuple[int, int]]:
    """path -> (mtime_ns, size) of every watched file under ``paths`` (directories walked with
    ``os.scandir``, skipping the tool and virtual-environment directories discovery skips); a
    named path that does not exist is recorded as (-1, -1), so its appearance is a change."""
    from .discovery import DEFAULT_EXCLUDED_DIRS

    out: dict[str, tuple[int, int]] = {}
    for top in paths:
        try:
            st = os.stat(top)
        except OSError:
            out[os.path.abspath(top)] = (-1, -1)
            continue
        if not os.path.isdir(top):
            out[os.path.abspath(top)] = (st.st_mtime_ns, st.st_size)
            continue
        stack = [top]
        while stack:
            directory = stack.pop()
            try:
                with os.scandir(directory) as it:
                    entries = list(it)
            except OSError:
                continue
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name not in DEFAULT_EXCLUDED_DIRS:
                            stack.append(entry.path)
                    elif entry.name.endswith(".py") or entry.name in _WATCHED_NAMES:
                        est = entry.stat()
                        out[entry.path] = (est.st_mtime_ns, est.st_size)
                except OSError:
                    continue
    return out


#: what a command's name is made of after its first letter (``_unknown_command``)
_COMMAND_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_-"


def _unknown_command(word: str) -> bool:
    """``word`` (the first argument) looks like a command (a bare lower-case word, as
    ``chekc``: ``[a-z][a-z0-9_-]*``) and names no file or directory: a mistyped command, not a
    path to lint. Tested without ``re``: every run asks (re and enum cost a warm run's start ~4 ms)."""
    return "a" <= word[:1] <= "z" and not word.strip(_COMMAND_CHARS) and not os.path.lexists(word)


def _rule_command(argv: list[str]) -> int:
    """``shutdown-lint rule CODE`` (the page, as ``--explain``), ``rule --all`` (as ``--list-rules``)."""
    import argparse

    p = argparse.ArgumentParser(prog="shutdown-lint rule", description="Show a rule's documentation page.")
    p.add_argument("code", nargs="?", metavar="CODE", help="a code (SHD201) or name (sys-exit-in-task)")
    p.add_argument("--all", action="store_true", help="list every rule")
    from .output import FORMATS

    p.add_argument("--output-format", choices=FORMATS)
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    fmt = args.output_format or ("full" if sys.stdout.isatty() else "concise")
    if args.all or args.code is None:
        if args.code is None and not args.all:
            raise UsageError("rule: give a rule's code or name (e.g. shutdown-lint rule SHD201), or --all")
        from .explain import list_rules

        list_rules(sys.stdout, fmt)
        return EXIT_OK
    from .explain import explain

    if not explain(args.code, sys.stdout, fmt):
        raise UsageError(f"no rule has the code or name {args.code!r} (see shutdown-lint rule --all)")
    return EXIT_OK


def _check_selectors(args, catalogue) -> None:
    """A rule selector given on the command line that no rule matches is an error naming the
    option it came from (a configuration file's own selectors are checked with the file's name)."""
    from . import config as C

    given = [("--select", v) for v in _split(args.select)] + [("--extend-select", v) for v in _split(args.extend_select)] \
        + [("--ignore", v) for v in _split(args.ignore)]
    for item in args.per_file_ignores or []:
        if ":" in item:  # else hierarchy says GLOB:RULES is expected
            given.extend(("--per-file-ignores", v) for v in _split([item.rpartition(":")[2]]))
    for option, selector in given:
        try:
            C.expand(selector, catalogue)
        except C.UnknownSelector as e:
            raise UsageError(f"{e} (given to {option} on the command line)") from None


def _cache_dir(args, cfg, start: str) -> Optional[str]:
    """``--cache-dir``, else the project root's ``.shutdown_lint_cache`` (a root found by a
    configuration file, a ``pyproject.toml`` or a git work tree), else the user's cache
    directory (``cache_key.cache_dir_for``). Never under a path given to lint: ``cfg.root`` is an
    existing directory (``config.existing_dir``), not a file argument or a mistyped path."""
    if args.cache_dir:
        return os.path.abspath(args.cache_dir)
    from .cache_key import cache_dir_for
    from .config import marked_root

    return cache_dir_for(cfg.root, cfg.path is not None or marked_root(start) is not None)


def _show_settings(args, resolver) -> int:
    from .hierarchy import describe

    target = os.path.abspath(args.show_settings)
    if not os.path.exists(target):
        raise UsageError(f"{args.show_settings}: no such file")
    given = {k: str(v) for k, v in (("select", ",".join(args.select or [])), ("extend-select", args.extend_select),
                                    ("ignore", args.ignore), ("per-file-ignores", args.per_file_ignores),
                                    ("target-version", args.target_version)) if v}
    sys.stdout.write(describe(target, resolver, given))
    return EXIT_OK


# ------------------------------------------------------------------ files


def _run_files(args, resolver, mode, fmt, cfg, catalogue, cache_dir, code_key=None) -> int:
    import gc

    # finding the files and serving the cache allocate a few objects per file and free none:
    # the cyclic GC would only walk them again and again (~5% of a warm run); it is back on
    # before any file is analysed
    collecting = gc.isenabled()
    gc.disable()
    try:
        found, results, clean, notes, plans = _plan(args, resolver, mode, cfg, cache_dir, code_key)
    finally:
        if collecting:
            gc.enable()
    n_jobs = args.jobs or os.cpu_count() or 1
    total = sum(len(plan[2]) for plan in plans)
    from .index import hooks as index_hooks

    # one project index for the whole run, whatever configuration each file falls under
    index_store = index_hooks.start(args.paths or ["."], None, cache_dir) if total else None
    outcomes: list = []
    with _progress(total, args.quiet) as tick:
        for settings, cache, jobs, files in plans:
            outcomes.extend(_run_group(settings, cache, jobs, mode, n_jobs, tick, results, notes, files))
    warning = index_hooks.finish(index_store, outcomes, cache_dir)
    if warning:
        notes.append(f"warning: {warning}")

    ordered = [results[f.abspath] for f in found.files if f.abspath in results] if results else []
    diagnostics = sorted((d for r in ordered for d in r.diagnostics), key=lambda d: d.sort_key())
    errors = [r.error for r in ordered if r.error]
    notes.extend(w if w.startswith("warning") else f"warning: {w}" for r in ordered for w in r.warnings)
    path_errors = list(found.errors)
    failed = bool(errors or path_errors)
    if mode.fix:
        from . import deployment

        notes.extend(deployment.notices(f.abspath for f in found.files
                                        if f.abspath in results and results[f.abspath].written))

    if args.write_baseline:
        from . import baseline

        n = baseline.write(args.write_baseline, diagnostics)
        _emit_notes(errors, notes, args.quiet)
        if not args.quiet:
            print(_with_failures(f"Wrote {_plural(n, 'finding')} to the baseline {args.write_baseline}",
                                 errors, path_errors), file=sys.stderr)
        return EXIT_ERROR if failed else EXIT_OK
    baselined = 0
    if args.baseline:
        from . import baseline

        try:
            diagnostics, baselined = baseline.filter_new(args.baseline, diagnostics)
        except baseline.BaselineError as e:
            raise UsageError(str(e)) from None

    if args.add_noqa:
        added, skipped = _add_noqa(diagnostics, {f.display: f.abspath for f in found.files}, resolver)
        notes.extend(skipped)
        _emit_notes(errors, notes, args.quiet)
        if not args.quiet:
            print(_with_failures(f"Added {_plural(added, 'noqa directive')}", errors, path_errors), file=sys.stderr)
        return EXIT_ERROR if failed else EXIT_OK

    if mode.diff:
        changed = [r for r in ordered if r.diff]
        for r in changed:
            sys.stdout.write(r.diff or "")
        _emit_notes(errors, notes, args.quiet)
        if not args.quiet:
            n = sum(r.fixed for r in changed)
            text = (f"Would fix {_plural(n, 'finding')} in {_plural(len(changed), 'file')}" if changed
                    else "No fixes available")
            print(_with_failures(text, errors, path_errors), file=sys.stderr)
        if failed:
            return EXIT_ERROR
        return EXIT_FINDINGS if changed else EXIT_OK

    report = _report(args, diagnostics, errors, ordered, mode, catalogue, baselined, clean)
    report.files = len(found.files)
    report.path_errors = path_errors
    _emit_notes(errors, notes, args.quiet)
    _render(args, report, fmt)
    return _exit_code(args, report, failed)


def _plan(args, resolver, mode, cfg, cache_dir, code_key):
    """Discovery, then what the cache serves: (found, results, clean, notes, plans); see ``_plan_group``."""
    from .discovery import discover

    exclude = [*cfg.exclude, *_split(args.exclude), *_split(args.extend_exclude)]
    from .config import CONFIG_FILES

    found = discover(args.paths or ["."], cfg.root, exclude, respect_gitignore=cfg.respect_gitignore
                     and not args.no_respect_gitignore, force_exclude=args.force_exclude,
                     config_names=frozenset() if resolver.fixed else frozenset(CONFIG_FILES))
    for err in found.errors:
        print(f"error: {err}", file=sys.stderr)
    for warning in found.warnings:
        print(f"shutdown-lint: warning: {warning}", file=sys.stderr)
    notes: list[str] = []

    # files grouped by the configuration that applies to them (one group in most projects)
    from .hierarchy import SettingsError

    groups: dict[Optional[str], list] = {}
    try:
        if resolver.fixed:  # one configuration for every file
            if found.files:
                groups[resolver.config_path("")] = found.files
        else:
            _group_by_config(found.files, resolver, groups, found.plain_dirs)
        group_settings = {path: resolver.settings(path) for path in groups}
        _apply_nested_excludes(groups, resolver, cfg, args)
    except SettingsError as e:
        raise UsageError(str(e)) from None
    # results worth an object: files with something to report, or analysed in this run; a
    # cached file with nothing to report is only counted, by stage (most files of a warm run)
    results: dict[str, FileResult] = {}
    clean: dict[str, int] = {}
    plans = [_plan_group(files, group_settings[path], mode, cache_dir, results, notes, code_key, clean, found.folders)
             for path, files in groups.items()]
    return found, results, clean, notes, plans


def _group_by_config(files, resolver, groups: dict, plain_dirs=frozenset()) -> None:
    """``files`` into ``groups`` by the configuration that applies to each, asked once a directory
    (a file's directory is its absolute path up to its last separator; a directory's files come one
    after another). ``plain_dirs``: directories the walk listed with no configuration file's name in
    them (``Discovery.plain_dirs``): theirs is their parent's, with no look at the disk."""
    sep = os.sep
    known: dict[str, object] = {}

    def nearest(directory: str):
        chain = []
        while directory not in known:
            cut = directory.rfind(sep)
            if directory in plain_dirs and cut > 0:
                chain.append(directory)
                directory = directory[:cut]
                continue
            known[directory] = resolver.config_path(directory + sep)  # it looks in the file's directory
            break
        found = known[directory]
        for d in chain:
            known[d] = found
        return found

    last_dir, members = None, None
    for f in files:
        abspath = f[1]  # SourceFile.abspath
        directory = abspath[:abspath.rfind(sep)]
        if directory != last_dir:
            last_dir = directory
            members = groups.setdefault(nearest(directory), [])
        members.append(f)


def _deps_changed(hit, abspath, cache, cache_dir) -> bool:
    from .index.hooks import deps_changed

    return deps_changed(hit, abspath, cache, cache_dir, cache.digests)  # a Cache lives for one run here


def _apply_nested_excludes(groups, resolver, cfg, args) -> None:
    """A nested configuration's ``exclude`` (anchored to its own directory) drops the files under
    it that discovery found by walking; a file named on the command line stays, unless --force-exclude."""
    from .discovery import Ignorer

    named: Optional[set[str]] = None  # built only when a nested config excludes something
    for path in list(groups):
        if path is None or path == cfg.path:
            continue
        nested = resolver.config(path)
        if not nested.exclude:
            continue
        if named is None:  # a long file list (pre-commit): ~50 ms of abspath on 8,670 paths
            named = {os.path.abspath(p) for p in args.paths or []}
        ignorer = Ignorer(nested.root, nested.exclude, False)  # .gitignore files were applied already
        groups[path] = [f for f in groups[path] if (f.abspath in named and not args.force_exclude)
                        or not ignorer.ignored(f.abspath, False)]


def _plan_group(files, settings, mode, cache_dir, results, notes, code_key=None, clean=None, folders=None):
    """Serve what the cache can for ``files`` (which share ``settings``: their cache index is keyed
    by them) into ``results`` (a file with nothing to report only counts in ``clean``, by stage);
    returns (settings, cache, jobs still to run, files). ``folders``: the stats discovery took of the
    folders it walked (``Discovery.folders``: they serve a dependency on the project's files)."""
    clean = {} if clean is None else clean
    if cache_dir is None:
        return settings, None, [_job(f.display, f.abspath, size=f.size) for f in files], files
    from .cache import Cache
    from .cache_key import fingerprint

    cache = Cache(cache_dir, fingerprint(settings, code_key))
    if folders:
        cache.folders = folders
    notes.extend(cache.warnings)
    jobs: list = []
    hit_of = cache.hit
    for f in cache.count_clean(files, clean):  # most files of a warm run end there
        display, abspath, mtime_ns, size = f
        if mtime_ns is None:  # discovery could not stat it (gone since its directory was listed)
            try:
                st = os.stat(abspath)
            except OSError:
                jobs.append(_job(display, abspath))  # the runner reports it
                continue
            mtime_ns, size = st.st_mtime_ns, st.st_size
        hit = hit_of(abspath, mtime_ns, size)
        if type(hit) is str:  # nothing to report (a file found by walking)
            key = hit or "unknown"
            clean[key] = clean.get(key, 0) + 1
            continue
        jobs.append(_plan_file(f, hit, mode, cache, cache_dir, results, clean))
    return settings, cache, [j for j in jobs if j is not None], files


def _plan_file(f, hit, mode, cache, cache_dir, results, clean):
    """A cached result dict (or a miss, None) for ``f``: served into ``results`` / ``clean``
    (returns None), or the job that re-lints the file."""
    if hit is not None and hit.get("deps") and _deps_changed(hit, f.abspath, cache, cache_dir):
        return _job(f.display, f.abspath, size=f.size)  # another module it relied on changed
    if hit is not None and not (mode.fixing and _has_applicable_fix(hit, mode.unsafe)) \
            and not (mode.edits and _lacks_edits(hit)):
        if hit.get("diagnostics") or hit.get("warnings") or hit.get("error"):
            from .cache import restore_path
            from .diagnostic import FileResult

            results[f.abspath] = FileResult.from_dict(restore_path(hit, f.display))
        else:  # nothing to report
            key = hit.get("stage") or "unknown"
            clean[key] = clean.get(key, 0) + 1
        return None
    known = None  # the worker serves it when the content hash matches: only if it has what this run prints
    entry = cache.entry(f.abspath)
    if entry is not None and not (mode.edits and _lacks_edits(entry[3])) \
            and not (entry[3].get("deps") and _deps_changed(entry[3], f.abspath, cache, cache_dir)):
        known = (entry[2], entry[3])
    return _job(f.display, f.abspath, known, f.size)


def _job(display: str, abspath: str, known: Optional[tuple[str, dict]] = None, size: Optional[int] = None):
    """A file to analyse (``runner.Job``). The runner is imported only when there is one:
    a fully cached run does without it. ``size``: discovery's (the pool's order; no stat again)."""
    from .runner import Job

    return Job(display, abspath, known, size)


def _has_applicable_fix(result: dict, unsafe: bool) -> bool:
    from .runner import has_applicable_fix

    return has_applicable_fix(result, unsafe)


class _Mode:
    """What this run does with fixes: ``runner.Mode``'s fields, without importing the runner
    (see ``_job``); ``runner()`` is the ``runner.Mode`` for the files analysed."""

    __slots__ = ("fix", "unsafe", "diff", "edits", "stamps")

    def __init__(self, fix: bool = False, unsafe: bool = False, diff: bool = False, edits: bool = False,
                 stamps: bool = True) -> None:
        self.fix, self.unsafe, self.diff, self.edits, self.stamps = fix, unsafe, diff, edits, stamps

    @property
    def fixing(self) -> bool:
        return self.fix or self.diff

    def runner(self):
        from .runner import Mode

        return Mode(fix=self.fix, unsafe=self.unsafe, diff=self.diff, edits=self.edits, stamps=self.stamps,
                    own_process=_own_process)


def _run_group(settings, cache, jobs, mode, n_jobs, tick, results, notes, files=()) -> list:
    """Run ``jobs``, store their results (and cache entries); returns the runner's outcomes."""
    outcomes: list = []
    if jobs:
        from .runner import run

        outcomes = run(jobs, settings, mode.runner() if isinstance(mode, _Mode) else mode, n_jobs, on_done=tick)
    for job, outcome in zip(jobs, outcomes):
        results[job.abspath] = outcome.result
        if cache is not None and outcome.stamp is not None:
            from .cache import strip_path

            mtime, size, digest = outcome.stamp
            cache.store(job.abspath, mtime, size, digest, strip_path(outcome.result.to_dict(), job.path))
    if cache is not None and (cache.dirty or cache.record_stale):
        # this run's files exist: no stat for them; the run record is of the files count_clean was given
        warning = cache.save(live={f.abspath for f in files}, seen=cache.seen)
        if warning:
            notes.append(f"warning: {warning}")
    return outcomes


def _lacks_edits(result: dict) -> bool:
    """A cached result made for a format that does not print fix edits (they are rendered
    only when needed) cannot serve json/sarif output."""
    return any(d.get("fix") is not None and not d["fix"].get("edits") for d in result.get("diagnostics", []))


def _report(args, diagnostics, errors, ordered, mode, catalogue, baselined, clean=None):
    from .output import Report

    sources: dict[str, Optional[list[str]]] = {}

    def source_lines(path: str) -> Optional[list[str]]:
        if path not in sources:
            try:
                from .runner import decode

                with open(path, "rb") as fh:
                    sources[path] = decode(fh.read()).splitlines()
            except OSError:
                sources[path] = None
        return sources[path]

    return Report(
        diagnostics=diagnostics,
        errors=errors,
        fixed=sum(r.fixed for r in ordered),
        fixed_files=[(r.path, r.fixed) for r in ordered if r.fixed],
        unsafe_fixes=mode.unsafe,
        fix_mode=mode.fix,
        show_fixes=args.show_fixes,
        rules=catalogue,
        source_lines=source_lines,
        baselined=baselined,
        quiet=args.quiet,
        stages=_stage_counts(ordered, clean),
    )


def _stage_counts(results: list[FileResult], clean: Optional[dict[str, int]] = None) -> dict[str, int]:
    """Files per analysis stage (``analyzer.STAGE_*``), for ``--statistics``; ``clean``: counts
    of the cached files with nothing to report, which have no ``FileResult``."""
    counts: dict[str, int] = dict(clean or {})
    for r in results:
        key = "error" if r.error else (r.stage or "unknown")
        counts[key] = counts.get(key, 0) + 1
    return counts


def _render(args, report, fmt: str, out=None) -> None:
    out = out or sys.stdout
    if args.statistics:
        from .output import statistics

        statistics.render(report, out, fmt)
        return
    from .output import render

    render(fmt, report, out)


def _exit_code(args, report, failed: bool) -> int:
    if failed:
        return EXIT_ERROR
    if args.exit_zero:
        return EXIT_OK
    if args.exit_non_zero_on_fix and report.fixed:
        return EXIT_FINDINGS
    return EXIT_FINDINGS if report.diagnostics else EXIT_OK


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _with_failures(text: str, errors: list[str], path_errors: list[str]) -> str:
    """A summary (``--diff``, ``--add-noqa``, ``--write-baseline``) that also says what failed."""
    if path_errors:
        n = len(path_errors)
        text += f"; {_plural(n, 'path')} {'does' if n == 1 else 'do'} not exist"
    if errors:
        text += f"; {_plural(len(errors), 'file')} could not be analysed"
    return text + "."


def _emit_notes(errors: list[str], notes: list[str], quiet: bool) -> None:
    for e in errors:  # ``path:line:col: message``, one a line (a path that does not exist: ``error: path: ...``)
        print(e, file=sys.stderr)
    if not quiet:
        for n in dict.fromkeys(notes):  # de-duplicated, in order
            print(n, file=sys.stderr)


class _progress:
    """A rich progress bar on stderr, only on a terminal and for large runs. No
    refresh thread: the pool forks workers, and forking next to a thread is unsafe."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total = total
        self.enabled = not quiet and total > PROGRESS_MIN_FILES and sys.stderr.isatty()
        self._bar = None
        self._done = 0

    def __enter__(self):
        if not self.enabled:
            return lambda _o: None
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(console=Console(file=sys.stderr), auto_refresh=False, transient=True)
        self._bar.start()
        task = self._bar.add_task("linting", total=self.total)

        def tick(_outcome) -> None:
            self._done += 1
            self._bar.advance(task)
            if self._done % 20 == 0 or self._done == self.total:
                self._bar.refresh()

        return tick

    def __exit__(self, *exc) -> None:
        if self._bar is not None:
            self._bar.stop()


def _add_noqa(diagnostics, abspaths: dict[str, str], resolver) -> tuple[int, list[str]]:
    """Append ``# noqa: CODE`` on each finding's line; keep a file's edit only if it
    still parses and the findings are then suppressed."""
    from .analyzer import lint_source
    from .runner import decode  # noqa: F401
    from .source import SourceError, read, write_atomic
    from .suppression import add_noqa
    import io
    import tokenize

    by_path: dict[str, dict[int, set[str]]] = {}
    for d in diagnostics:
        by_path.setdefault(d.path, {}).setdefault(d.line, set()).add(d.code)
    added, notes = 0, []
    for path, wanted in sorted(by_path.items()):
        abspath = abspaths.get(path, path)
        try:
            snap = read(abspath)
            encoding, _ = tokenize.detect_encoding(io.BytesIO(snap.data).readline)
            new = add_noqa(snap.data.decode(encoding), wanted).encode(encoding)
        except (SourceError, SyntaxError, UnicodeError, LookupError) as e:
            notes.append(f"warning: {path}: noqa not added: {e}")
            continue
        after = lint_source(new, path, resolver.for_file(os.path.abspath(abspath)))
        still = {(d.line, d.code) for d in after.diagnostics}
        if after.error or any((line, code) in still for line, codes in wanted.items() for code in codes):
            notes.append(f"warning: {path}: noqa not added: the comment would not suppress the findings there "
                         "(e.g. the line ends inside a string)")
            continue
        try:
            write_atomic(abspath, new, snap)
        except (SourceError, OSError) as e:
            notes.append(f"warning: {path}: noqa not added: {e}")
            continue
        added += sum(len(c) for c in wanted.values())
    return added, notes


# ------------------------------------------------------------------ stdin


def _run_stdin(args, settings, mode, fmt, cfg, catalogue) -> int:
    from .analyzer import AnalysisError, lint_source
    from .discovery import Ignorer

    data = sys.stdin.buffer.read()
    path = args.stdin_filename or "-"
    if args.stdin_filename and args.force_exclude:
        ignorer = Ignorer(cfg.root, [*cfg.exclude, *_split(args.exclude)], cfg.respect_gitignore)
        if ignorer.ignored(os.path.abspath(args.stdin_filename), False):
            if mode.fix:
                sys.stdout.buffer.write(data)
            return EXIT_OK
    from .index import hooks as index_hooks

    # the index of what is reachable from the named file (none for anonymous stdin)
    if args.stdin_filename:
        index_hooks.start([args.stdin_filename], None, None)
    result = lint_source(data, path, settings)  # a syntax error counts only where a rule looks
    fixed_count = 0
    if mode.fixing and not result.error:
        from .fixer import fix_source
        from .runner import unified_diff

        try:
            outcome = fix_source(data, path, settings, unsafe=mode.unsafe)
        except AnalysisError as e:  # pragma: no cover - lint_source parsed it
            result.error = str(e)
        else:
            fixed_count = outcome.applied
            if mode.diff:
                if outcome.source != data:
                    sys.stdout.write(unified_diff(path, data, outcome.source))
                return EXIT_FINDINGS if outcome.source != data else EXIT_OK
            result = lint_source(outcome.source, path, settings)
            result.fixed = fixed_count
            result.warnings = outcome.warnings + result.warnings
            data = outcome.source
    if mode.fix:
        sys.stdout.buffer.write(data)  # the fixed (or unchanged) code
        sys.stdout.flush()
    elif mode.diff:
        return EXIT_ERROR if result.error else EXIT_OK
    errors = [result.error] if result.error else []
    text = data.decode("utf-8", errors="replace").splitlines()
    report = _report(args, sorted(result.diagnostics, key=lambda d: d.sort_key()), errors, [result], mode,
                     catalogue, 0)
    report.source_lines = lambda _p: text
    report.files = 1
    _emit_notes(errors, list(result.warnings), args.quiet)
    # with --fix the code goes to stdout, so the findings go to stderr
    _render(args, report, fmt, out=sys.stderr if mode.fix else sys.stdout)
    return _exit_code(args, report, bool(errors))
