"""libcst is imported on first use (``shutdown_lint/lazy_libcst.py``): a run whose files all go
through the ast engine (a one-file pre-commit run, every file of ray+torch) never imports it
(~0.15 CPU-s a process), and a run that needs it (``--fix``, syntax newer than this Python's,
``SHUTDOWN_LINT_AST=off``, in a forked ``-j2`` pool too) imports it and gives the same answers.

Each run is a fresh interpreter: what this test session imported says nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from shutdown_lint import registry

from .conftest import HAZARD, REPO

#: runs the CLI, then says on stderr whether libcst was imported
_PROBE = textwrap.dedent("""\
    import sys
    from shutdown_lint.cli import main
    code = main(sys.argv[1:])
    sys.stderr.write(f"libcst imported: {'libcst' in sys.modules}\\n")
    sys.exit(code)
""")

ASYNC_CLEAN = "import asyncio\n\n\nasync def main():\n    await asyncio.sleep(1)\n"
BLOCKING = "import time\n\n\nasync def fetch():\n    time.sleep(1)\n"
NEWER = BLOCKING + "\n\ntype Pair[T] = tuple[T, T]\n"  # PEP 695: Python 3.11's ast rejects it


def _run(cwd, *args, ast_mode: str | None = None) -> tuple[str, bool]:
    env = dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1")
    env.pop("SHUTDOWN_LINT_AST", None)
    if ast_mode is not None:
        env["SHUTDOWN_LINT_AST"] = ast_mode
    done = subprocess.run([sys.executable, "-c", _PROBE, "--no-cache", "--output-format", "concise", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode in (0, 1), done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("libcst imported: ")]
    assert lines, done.stderr
    return done.stdout, lines[-1] == "libcst imported: True"


def _files(tmp_path, count: int = 1) -> list[str]:
    names = []
    for i in range(count):
        for stem, code in (("clean", ASYNC_CLEAN), ("hazard", HAZARD), ("blocking", BLOCKING)):
            (tmp_path / f"{stem}{i}.py").write_text(code)
            names.append(f"{stem}{i}.py")
    return names


def test_importing_the_engine_and_every_rule_does_not_import_libcst():
    code = ("import sys; from shutdown_lint import analyzer, cli, registry, runner; registry.all_rules(); "
            "print('libcst' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=REPO)).stdout
    assert out.strip() == "False"


def test_an_ast_only_run_does_not_import_libcst_and_finds_what_libcst_finds(tmp_path):
    names = _files(tmp_path)
    one, one_imported = _run(tmp_path, "clean0.py")
    assert "SHD" not in one and not one_imported
    out, imported = _run(tmp_path, *names)
    assert "SHD201" in out and "SHD301" in out and not imported
    off, off_imported = _run(tmp_path, *names, ast_mode="off")
    assert off == out and off_imported


def test_a_fix_imports_libcst_and_applies(tmp_path):
    (tmp_path / "blocking.py").write_text(BLOCKING)
    _, imported = _run(tmp_path, "--fix", "--unsafe-fixes", "blocking.py")
    assert imported
    assert "await asyncio.sleep(1)" in (tmp_path / "blocking.py").read_text()


def test_newer_syntax_goes_through_libcst(tmp_path):
    (tmp_path / "newer.py").write_text(NEWER)
    out, imported = _run(tmp_path, "--target-version", "py312", "newer.py")
    assert "SHD301" in out
    assert imported == (sys.version_info < (3, 12))


def test_a_forked_pool_imports_libcst_where_a_file_needs_it(tmp_path):
    names = _files(tmp_path, count=4)  # 12 files: over the pool's serial threshold
    serial, _ = _run(tmp_path, "-j1", *names)
    pooled, imported = _run(tmp_path, "-j2", *names)
    assert pooled == serial and "SHD201" in pooled and not imported
    off, _ = _run(tmp_path, "-j2", *names, ast_mode="off")  # each worker imports libcst on its first file
    assert off == serial


#: lints every rule's examples; ``stages``: prints the indices of those the ast engine lints (libcst
#: allowed), ``check INDICES``: lints those and fails at the first after which libcst is imported
_EXAMPLES = textwrap.dedent("""\
    import json, sys
    from shutdown_lint import analyzer, registry
    from shutdown_lint.settings import Settings
    rules = registry.all_rules()
    settings = Settings(selected=tuple(r.code for r in rules))
    sources = [ex if isinstance(ex, str) else ex.code for r in rules for ex in (*r.valid, *r.invalid)]
    if sys.argv[1] == "stages":
        stages = [analyzer.lint_source(s.encode(), f"ex{i}.py", settings, fix_edits=False).stage
                  for i, s in enumerate(sources)]
        print(json.dumps([i for i, st in enumerate(stages) if st not in (analyzer.STAGE_LIBCST, analyzer.STAGE_NEWER)]))
    else:
        for i in json.loads(sys.argv[2]):
            analyzer.lint_source(sources[i].encode(), f"ex{i}.py", settings, fix_edits=False)
            if "libcst" in sys.modules:
                print(f"libcst imported by example {i}:\\n{sources[i]}")
                sys.exit(1)
        print("ok")
""")


def test_the_ast_engine_does_not_import_libcst_on_the_rules_examples():
    """Every rule example the ast engine lints leaves libcst unimported, but those with an f-string:
    on the ast path SHD601 reads an f-string literal's pieces, and SHD105 the code of a node inside
    an f-string, with libcst (as the libcst path reads them)."""
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("SHUTDOWN_LINT_AST", None)

    def run(*args) -> str:
        done = subprocess.run([sys.executable, "-c", _EXAMPLES, *args], capture_output=True, text=True,
                              timeout=300, env=env)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    sources = [ex if isinstance(ex, str) else ex.code for r in registry.all_rules() for ex in (*r.valid, *r.invalid)]
    on_ast = [i for i in json.loads(run("stages")) if 'f"' not in sources[i] and "f'" not in sources[i]]
    assert len(on_ast) > 100
    assert run("check", json.dumps(on_ast)).strip() == "ok"
