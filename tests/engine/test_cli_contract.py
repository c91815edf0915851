"""The command's contract with CI and with a first-time user: every exit path says what happened
(exit status, the last line), a path that does not exist fails in every output format, nothing is
ever created at a path given to lint, and ruff's habits (``check``, ``rule``, ``--watch``,
``--version``) work. Real subprocesses where the process boundary matters (exit status, signals,
what is left on disk); the in-process ``cli`` fixture elsewhere."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

import pytest

from shutdown_lint import __version__

from .conftest import CLEAN, HAZARD, REPO, run_sub, write

# SHD201 with an unsafe fix only: a coroutine run as a task (its loop may be the main thread's)
UNSAFE_ONLY = (
    "import asyncio\nimport sys\n\n\nasync def worker():\n    sys.exit(1)\n\n\n"
    "async def main():\n    task = asyncio.create_task(worker())\n    await task\n"
)
# SHD301 with no fix at all
NO_FIX = "async def handler(path):\n    with open(path) as fh:\n        return fh.read()\n"
TEXT_FORMATS = ("concise", "full")
FORMATS = ("concise", "full", "json", "sarif", "junit", "github")


@pytest.fixture
def bare(tmp_path, monkeypatch):
    """A folder with no pyproject.toml, no git work tree and no config above it (tmp_path), the
    user cache directory pointed into tmp_path."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return work


def _env(tmp_path) -> dict:
    return dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1", XDG_CACHE_HOME=str(tmp_path / "xdg"))


def _sub(cwd, *args, tmp_path, timeout=120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shutdown_lint", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=_env(tmp_path))


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


# ------------------------------------------------------------------ paths that do not exist


@pytest.mark.parametrize("fmt", FORMATS)
def test_missing_path_fails_in_every_format(bare, cli, fmt):
    write(bare / "ok.py", CLEAN)
    run = cli(bare, "--output-format", fmt, "ok.py", "typo.py")
    assert run.code == 2
    assert "error: typo.py: no such file or directory" in run.err.splitlines()
    assert "All checks passed!" not in run.out + run.err
    if fmt in TEXT_FORMATS:
        assert _last_line(run.out) == "No findings; 1 path does not exist."
    elif fmt == "json":
        (item,) = json.loads(run.out)
        assert item["code"] is None and item["name"] == "error" and item["path"] == "typo.py"
        assert item["message"] == "no such file or directory" and (item["line"], item["column"]) == (1, 1)
    elif fmt == "sarif":
        invocation = json.loads(run.out)["runs"][0]["invocations"][0]
        assert invocation["executionSuccessful"] is False
        (note,) = invocation["toolExecutionNotifications"]
        assert note["level"] == "error" and note["message"]["text"] == "typo.py: no such file or directory"
    elif fmt == "junit":
        root = ET.fromstring(run.out)
        assert root.get("errors") == "1" and root.get("failures") == "0"
        assert not [c for c in root.iter("testcase") if c.get("name") == "No findings"]
        (error,) = list(root.iter("error"))
        assert error.get("message") == "typo.py: no such file or directory"
    else:
        assert run.out.splitlines() == ["::error title=shutdown-lint,file=typo.py,line=1,col=1::"
                                        "typo.py: no such file or directory"]
    assert not (bare / "typo.py").exists()


def test_no_lint_target_path_is_ever_created(bare, tmp_path):
    write(bare / "real.py", CLEAN)
    typos = [["typo.py"], ["--fix", "typo_dir"], ["check", "typo2.py"], ["sub/missing/deep.py"],
             ["real.py", "also_missing.py"], ["--output-format", "sarif", "typo3.py"], ["--watch-typo"]]
    for args in typos:
        proc = _sub(bare, *args, tmp_path=tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "All checks passed!" not in proc.stdout + proc.stderr
    assert sorted(os.listdir(bare)) == ["real.py"]  # no typo.py, typo_dir, sub/, no cache beside them
    # the cache of a folder that is no project lives in the user's cache directory
    (cache,) = os.listdir(tmp_path / "xdg" / "shutdown-lint")
    assert cache.startswith("work-") and os.path.exists(tmp_path / "xdg" / "shutdown-lint" / cache / "CACHEDIR.TAG")


def test_cache_lives_in_the_project_root(project, cli, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    write(project / "pkg" / "a.py", CLEAN)
    run = cli(project / "pkg", "a.py", "typo.py")
    assert run.code == 2
    assert (project / ".shutdown_lint_cache" / "CACHEDIR.TAG").exists()
    assert not (project / "pkg" / "typo.py").exists() and not (tmp_path / "xdg").exists()


# ------------------------------------------------------------------ summaries


def test_syntax_error_in_the_only_file_is_no_pass(bare, cli):
    write(bare / "broken.py", "import sys, threading\ndef broken(:\n    sys.exit(1)\nthreading.Thread(target=broken)\n")
    for fmt in TEXT_FORMATS:
        run = cli(bare, "--no-cache", "--output-format", fmt)
        assert run.code == 2
        assert run.err.startswith("broken.py:2:") and "syntax error" in run.err
        assert _last_line(run.out) == "No findings; 1 file could not be analysed."
    run = cli(bare, "--no-cache", "--statistics", "--output-format", "concise")
    assert run.code == 2 and _last_line(run.out) == "No findings; 1 file could not be analysed."
    assert "1 could not be analysed" in run.out


def test_findings_and_failures_on_one_line(bare, cli):
    write(bare / "bad.py", HAZARD)
    write(bare / "broken.py", "import sys, threading\ndef broken(:\n    sys.exit(1)\nthreading.Thread(target=broken)\n")
    run = cli(bare, "--no-cache", "--output-format", "concise", ".", "typo.py")
    assert run.code == 2
    assert _last_line(run.out) == "Found 1 finding (1 fixable); 1 path does not exist; 1 file could not be analysed."


def test_clean_run_passes(bare, cli):
    write(bare / "ok.py", CLEAN)
    run = cli(bare, "--output-format", "concise")
    assert run.code == 0 and run.out == "All checks passed!\n"


def test_singular_and_plural(bare, cli):
    write(bare / "one.py", HAZARD)
    write(bare / "unsafe.py", UNSAFE_ONLY)
    run = cli(bare, "--no-cache", "--output-format", "concise", "one.py", "unsafe.py")
    assert run.out.splitlines()[-2:] == [
        "[*] 1 fixable with the `--fix` option (1 hidden fix can be enabled with the `--unsafe-fixes` option).",
        "Found 2 findings (1 fixable, 1 hidden unsafe fix).",
    ]
    run = cli(bare, "--no-cache", "--diff", "one.py")
    assert run.code == 1 and run.err.splitlines()[-1] == "Would fix 1 finding in 1 file."
    write(bare / "two.py", HAZARD)
    run = cli(bare, "--no-cache", "--diff", "one.py", "two.py")
    assert run.err.splitlines()[-1] == "Would fix 2 findings in 2 files."
    run = cli(bare, "--no-cache", "--diff", "unsafe.py")
    assert run.code == 0 and run.err.splitlines()[-1] == "No fixes available."


def test_fix_summary_with_unsafe_fixes_remaining(bare, cli):
    write(bare / "a.py", HAZARD)
    write(bare / "b.py", HAZARD)
    write(bare / "unsafe.py", UNSAFE_ONLY)
    write(bare / "manual.py", NO_FIX)
    run = cli(bare, "--no-cache", "--fix", "--output-format", "concise", "--select", "SHD201,SHD301")
    assert run.code == 1
    # what remains keeps its marks: no [*] on a finding --fix left (its fix is unsafe or absent)
    assert [line.split(" ", 2)[1] for line in run.out.splitlines()[:3]] == ["SHD301", "SHD301", "SHD201"]
    assert "[*]" not in "".join(run.out.splitlines()[:3])
    assert run.out.splitlines()[-2:] == [
        "No fixes available (1 hidden fix can be enabled with the `--unsafe-fixes` option). "
        "2 findings have no automatic fix: `shutdown-lint rule CODE` says what to change.",
        "Found 5 findings (2 fixed, 3 remaining).",
    ]
    run = cli(bare, "--no-cache", "--fix", "--unsafe-fixes", "--output-format", "concise", "--select", "SHD201,SHD301")
    assert run.code == 1
    assert run.out.splitlines()[-2:] == [
        "2 findings have no automatic fix: `shutdown-lint rule CODE` says what to change.",
        "Found 3 findings (1 fixed, 2 remaining).",
    ]


def test_fix_summary_when_nothing_remains(bare, cli):
    write(bare / "a.py", HAZARD)
    run = cli(bare, "--no-cache", "--fix", "--output-format", "full")
    assert run.code == 0 and run.out.splitlines() == ["Found 1 finding (1 fixed, 0 remaining)."]
    run = cli(bare, "--no-cache", "--output-format", "full")
    assert run.code == 0 and run.out == "All checks passed!\n"


def test_statistics_in_users_words(bare, cli):
    write(bare / "a.py", HAZARD)
    write(bare / "plain.py", "x = 1\n")
    run = cli(bare, "--no-cache", "--statistics", "--output-format", "concise")
    assert run.code == 1
    lines = run.out.splitlines()
    assert lines[-2] == ("Checked 2 files: 1 held nothing the selected rules look for (not syntax-checked), "
                         "1 analysed in full, 0 could not be analysed.")
    assert lines[-1] == "Found 1 finding (1 fixable)."
    assert "ruled out" not in run.out and "tier" not in run.out


# ------------------------------------------------------------------ commands


def test_check_is_the_bare_form(bare, cli):
    write(bare / "a.py", HAZARD)
    plain = cli(bare, "--no-cache", "--output-format", "concise", ".")
    check = cli(bare, "check", "--no-cache", "--output-format", "concise", ".")
    default = cli(bare, "check", "--no-cache", "--output-format", "concise")
    assert plain.code == check.code == default.code == 1
    assert plain.out == check.out == default.out and "a.py:7:5: SHD201" in check.out


def test_rule_prints_the_page(bare, cli):
    rule = cli(bare, "rule", "SHD201", "--output-format", "json")
    explain = cli(bare, "--explain", "SHD201", "--output-format", "json")
    assert rule.code == explain.code == 0 and rule.out == explain.out
    assert json.loads(rule.out)["code"] == "SHD201"
    assert cli(bare, "rule", "sys-exit-in-task", "--output-format", "json").out == rule.out
    listed = cli(bare, "rule", "--all", "--output-format", "json")
    assert listed.code == 0 and "SHD201" in [r["code"] for r in json.loads(listed.out)]
    missing = cli(bare, "rule", "SHD999")
    assert missing.code == 2 and "no rule has the code or name 'SHD999'" in missing.err
    assert cli(bare, "rule").code == 2
    assert os.listdir(bare) == []


def test_unknown_command(bare, tmp_path):
    proc = _sub(bare, "chekc", ".", tmp_path=tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip() == ("shutdown-lint: error: unknown command 'chekc' (commands: check, rule, map, server), "
                                   "and no file or directory has that name")
    assert os.listdir(bare) == []
    # a directory with that name is linted
    write(bare / "chekc" / "a.py", CLEAN)
    assert _sub(bare, "chekc", tmp_path=tmp_path).returncode == 0


def test_version(bare, tmp_path):
    for args in (["--version"], ["--version", "--no-cache"]):
        proc = _sub(bare, *args, tmp_path=tmp_path)
        assert proc.returncode == 0 and proc.stdout == f"shutdown-lint {__version__}\n" and proc.stderr == ""


def test_select_unknown_on_the_command_line_names_the_option(project, cli):
    run = cli(project, "--no-cache", "--select", "SHD999")
    assert run.code == 2
    assert "'SHD999'" in run.err and "given to --select on the command line" in run.err
    assert "pyproject.toml" not in run.err
    write(project / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD998"]\n')
    run = cli(project, "--no-cache")
    assert run.code == 2 and "'SHD998'" in run.err and "pyproject.toml" in run.err


# ------------------------------------------------------------------ --watch


class _Reader:
    """Collects a pipe's text on a thread, so the test can wait for a line without blocking."""

    def __init__(self, stream) -> None:
        self.text = ""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._pump, args=(stream,), daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for chunk in iter(lambda: stream.readline(), ""):
            with self._lock:
                self.text += chunk

    def wait_for(self, needle: str, start: int = 0, timeout: float = 60) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                at = self.text.find(needle, start)
            if at >= 0:
                return at + len(needle)
            time.sleep(0.05)
        raise AssertionError(f"{needle!r} not seen within {timeout} s; got {self.text!r}")

    def join(self) -> None:
        self._thread.join(timeout=10)


def test_watch_relints_on_change_and_ctrl_c_ends_it(bare, tmp_path):
    target = write(bare / "app.py", CLEAN)
    proc = subprocess.Popen([sys.executable, "-m", "shutdown_lint", "--watch", "--output-format", "concise"],
                            cwd=bare, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(tmp_path))
    out, err = _Reader(proc.stdout), _Reader(proc.stderr)
    try:
        at = out.wait_for("All checks passed!\n")
        time.sleep(0.1)  # a different mtime even on a coarse clock; the size changes anyway
        write(target, HAZARD)
        out.wait_for("app.py:7:5: SHD201", at)
        err.wait_for("File change detected")
        at = out.wait_for("Found 1 finding (1 fixable).\n", at)
        write(target, CLEAN)  # and back: the cached result of the clean text serves it
        out.wait_for("All checks passed!\n", at)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out.join()
    err.join()
    lines = err.text.splitlines()
    assert "Traceback" not in err.text
    assert lines[-1].startswith("shutdown-lint: interrupted")  # one line
    assert [line for line in lines if "interrupted" in line] == [lines[-1]]


# ------------------------------------------------------------------ the small items


def test_json_positions_are_line_and_column_everywhere(bare, cli):
    write(bare / "a.py", HAZARD)
    (item,) = json.loads(cli(bare, "--no-cache", "--output-format", "json").out)
    assert {"line", "column", "end_line", "end_column"} <= set(item)
    for edit in item["fix"]["edits"]:
        assert set(edit) == {"content", "location", "end_location"}
        assert set(edit["location"]) == set(edit["end_location"]) == {"line", "column"}
    lines = HAZARD.splitlines(keepends=True)
    for edit in sorted(item["fix"]["edits"], key=lambda e: e["location"]["line"], reverse=True):
        lines[edit["location"]["line"] - 1:edit["end_location"]["line"] - 1] = [edit["content"]]
    assert "runtime_guard.hard_exit(3)" in "".join(lines)


def test_finding_levels_agree(bare, cli):
    from shutdown_lint.output import FINDING_LEVEL

    write(bare / "a.py", HAZARD)
    log = json.loads(cli(bare, "--no-cache", "--output-format", "sarif").out)["runs"][0]
    assert {r["level"] for r in log["results"]} == {FINDING_LEVEL}
    assert {r["defaultConfiguration"]["level"] for r in log["tool"]["driver"]["rules"]} == {FINDING_LEVEL}
    assert cli(bare, "--no-cache", "--output-format", "github").out.startswith(f"::{FINDING_LEVEL} ")
    pytest.importorskip("pygls")
    from lsprotocol import types

    from shutdown_lint.lsp import _severity

    assert _severity() == {"warning": types.DiagnosticSeverity.Warning, "error": types.DiagnosticSeverity.Error}[
        FINDING_LEVEL]


def test_hover_is_short(bare):
    from shutdown_lint import registry
    from shutdown_lint.explain import hover_markdown, page_markdown

    for rule in registry.all_rules():
        text = hover_markdown(rule)
        assert len(text) < 2500 < len(page_markdown(rule)) or len(text) < len(page_markdown(rule))
        assert text.startswith(f"# {rule.code} ") and "## What it does" in text
        assert f"`shutdown-lint rule {rule.code}`" in text


@pytest.mark.parametrize("header, expected", [
    ("import sys\nimport threading\n\nfrom . import util\n",
     "import sys\nimport threading\nimport runtime_guard\n\nfrom . import util\n"),
    ('"""Doc."""\n\nfrom . import util\nimport sys\nimport threading\n',
     '"""Doc."""\n\nimport runtime_guard\n\nfrom . import util\nimport sys\nimport threading\n'),
    ("import sys\nimport threading\n", "import sys\nimport threading\nimport runtime_guard\n"),
])
def test_added_import_goes_before_relative_imports(bare, cli, header, expected):
    body = HAZARD.split("\n", 2)[2]  # the hazard without its two imports
    path = write(bare / "pkg" / "mod.py", header + body)
    write(bare / "pkg" / "__init__.py", "")
    write(bare / "pkg" / "util.py", "")
    json_edits = json.loads(cli(bare, "--no-cache", "--output-format", "json", "pkg/mod.py").out)[0]["fix"]["edits"]
    run = cli(bare, "--no-cache", "--fix", "pkg/mod.py")
    assert run.code == 0, run.out + run.err
    fixed = path.read_text()
    assert fixed.startswith(expected), fixed
    compile(fixed, "mod.py", "exec")
    # the JSON edits (rendered by another path) put it in the same place
    lines = (header + body).splitlines(keepends=True)
    for edit in sorted(json_edits, key=lambda e: e["location"]["line"], reverse=True):
        lines[edit["location"]["line"] - 1:edit["end_location"]["line"] - 1] = [edit["content"]]
    assert "".join(lines) == fixed


def test_version_subprocess_helper_still_works(tmp_path):
    # the shared helper (conftest.run_sub) runs the module the same way
    proc = run_sub(tmp_path, "--version")
    assert proc.returncode == 0 and proc.stdout.decode().strip() == f"shutdown-lint {__version__}"
