"""Which engine each analysed file of a corpus took (issue 30): Python's ``ast``, libcst, or none.

Runs the CLI in this process at ``-j1`` with ``analyzer.lint_source`` wrapped, and counts each
file's ``FileResult.stage``: ``text`` / ``tree`` (the candidate tiers ruled every rule out),
``ast`` (every rule that examines the file decided on ``ast``), ``libcst``, ``newer-syntax``
(a file in syntax newer than this Python's ``ast``: libcst alone). For the files that took
libcst it names the rules without an ``ast_check`` that examined them.

    python bench/engine_stages.py rt            # ray+torch as bench_cold.py lists it
    python bench/engine_stages.py ref           # the reference corpus (bench/build_corpus.py)
    python bench/engine_stages.py DIR [ARGS..]  # any folder, linted as `.` from there
"""

from __future__ import annotations

import collections
import contextlib
import io
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cold  # noqa: E402  (the corpora's file lists)

from shutdown_lint import analyzer, cli  # noqa: E402


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    name, extra = argv[0], argv[1:]
    if name in bench_cold.CORPORA:
        root, files = bench_cold.files_of(name)
    else:
        root, files = Path(name), ["."]
    stages: collections.Counter = collections.Counter()
    on_libcst: dict[str, list[str]] = {}
    unported: dict[str, list[str]] = {}
    lint_source, select_rules = analyzer.lint_source, analyzer.select_rules

    def counted(source, path, settings, **kw):
        result = lint_source(source, path, settings, **kw)
        stages[result.stage or "none"] += 1
        if result.stage in (analyzer.STAGE_LIBCST, analyzer.STAGE_NEWER):
            on_libcst[path] = unported.get(path, [])
        return result

    def selected(source, path, settings, rules=None):
        out = select_rules(source, path, settings, rules)
        unported[path] = [r.code for r in out[0] if getattr(r, "ast_check", None) is None]
        return out

    analyzer.lint_source, analyzer.select_rules = counted, selected
    os.chdir(root)
    with contextlib.redirect_stdout(io.StringIO()):
        cli.main(["--no-cache", "-q", "--exit-zero", "-j1", *extra, *files])
    analysed = sum(n for stage, n in stages.items() if stage not in ("text", "tree", "none"))
    print(f"{name}: {sum(stages.values()):,} files; stages {dict(stages)}")
    print(f"{name}: {len(on_libcst)} of {analysed} analysed files parsed by libcst")
    for path, codes in sorted(on_libcst.items()):
        print(f"  {path}: {' '.join(codes) or '(newer syntax)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
