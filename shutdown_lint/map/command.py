"""``shutdown-lint map``: argument parsing, the map, the rules' findings, the output."""

from __future__ import annotations

import argparse
import os
import sys

from .entry import Entry, EntryError, resolve


def findings_for(files: list[str], project: str) -> tuple[list, list[str]]:
    """The analyzer's findings on ``files`` (each under its nearest configuration, with the
    project index), as ``check`` would report them; and one note per file it could not analyse."""
    from .. import config as C
    from ..analyzer import lint_source
    from ..hierarchy import Overrides, Resolver, SettingsError
    from ..index import hooks
    from ..index import project as index_project

    cfg = C.load(None, project)
    catalogue = C.load_catalogue(None, C.code_key())
    ns = argparse.Namespace(select=None, extend_select=None, ignore=None, per_file_ignores=None,
                            target_version=None)
    resolver = Resolver(cfg, Overrides.from_args(ns), catalogue, fixed=False)
    previous = index_project.current()  # the map in a process that lints too (tests, the language server)
    hooks.start([project], None, None)
    try:
        return _lint_files(files, project, resolver, lint_source, SettingsError)
    finally:
        index_project.set_current(previous)


def _lint_files(files, project, resolver, lint_source, SettingsError) -> tuple[list, list[str]]:
    out, notes = [], []
    for f in files:
        shown = os.path.relpath(f, project) if f.startswith(project + os.sep) else f
        try:
            settings = resolver.settings(resolver.config_path(f))
            with open(f, "rb") as fh:
                result = lint_source(fh.read(), f, settings, fix_edits=False)
        except (OSError, SettingsError) as e:
            notes.append(f"{shown}: not analysed ({e})")
            continue
        except Exception as e:  # noqa: BLE001 - a rule's own bug must not lose the map
            notes.append(f"{shown}: not analysed (internal error in the analyzer: {e.__class__.__name__}: {e}); "
                         "its findings are missing from the map")
            continue
        if result.error:
            notes.append(result.error.replace(f, shown, 1))
        out.extend(result.diagnostics)
    return out, notes


def build_map(entry: Entry):
    from .builder import Builder, attach

    builder = Builder(entry)
    result = builder.build()
    files = sorted(p for p, m in builder.modules.items() if m is not None)
    diagnostics, notes = findings_for(files, entry.project)
    result.notes.extend(notes)
    result.project = entry.project  # type: ignore[attr-defined]
    attach(result, diagnostics, entry.project)
    result.files = files  # type: ignore[attr-defined]
    return result


def main(argv: list[str]) -> int:
    from ..cli import UsageError

    p = argparse.ArgumentParser(
        prog="shutdown-lint map",
        description="The tree of what a program starts (event loops, tasks, threads, executors, child "
                    "processes, Ray work, process groups, signal handlers, atexit hooks, resources) and how "
                    "each piece stops on normal exit, an exception, Ctrl+C and SIGTERM. See docs/map.md.")
    p.add_argument("entry", nargs="?", metavar="ENTRY",
                   help="a script path, or a console script's name from pyproject.toml [project.scripts]")
    p.add_argument("-m", dest="module", metavar="MODULE", help="the entry is a module (as python -m)")
    p.add_argument("--project", metavar="DIR",
                   help="the project's root (default: the pyproject.toml folder above a script; else .)")
    p.add_argument("--format", choices=("tree", "json", "html"), default="tree", help="default: tree")
    p.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    p.add_argument("--against", metavar="REPORT",
                   help="an exit report (python -m runtime_guard --exit-report --json REPORT): mark which predicted "
                        "gaps happened and list the leftovers the map did not predict")
    try:
        args = p.parse_args(argv)
    except SystemExit as e:
        return int(e.code or 0)
    if bool(args.entry) == bool(args.module):
        raise UsageError("map: give one entry: a script path, -m MODULE, or a console script's name")
    if args.project and not os.path.isdir(args.project):
        raise UsageError(f"map: --project {args.project!r} is not a directory")
    try:
        entry = resolve(args.module or args.entry, bool(args.module), args.project)
        report = None
        if args.against:
            from .against import load_report

            report = load_report(args.against)
        result = build_map(entry)
        if report is not None:
            from .against import compare

            result.against = compare(result, report, args.against)
    except EntryError as e:
        raise UsageError(str(e)) from None
    if args.format == "json":
        import json

        text = json.dumps(result.to_dict(), indent=2) + "\n"
    elif args.format == "html":
        from .html import render_html

        text = render_html(result)
    else:
        from .tree import render_tree

        if args.output:
            text = render_tree(result, color=False)
        else:
            render_tree(result, out=sys.stdout)
            return 0
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as e:
            raise UsageError(f"map: cannot write {args.output}: {e}") from None
    else:
        sys.stdout.write(text)
    return 0


