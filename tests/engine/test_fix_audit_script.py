"""bench/fix_audit.py: the audit of ``--fix --unsafe-fixes`` on checked-out code bases.

Runs the script for real (a subprocess, the real linter) on a tiny generated tree, and once
with a stand-in linter whose fix breaks the file, so each check is shown to pass *and* to fail.
Fast: no network, a few seconds of linting."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "fix_audit.py")

WORKER = textwrap.dedent(
    """\
    import asyncio
    import subprocess
    import time


    async def poll(n: int) -> int:
        time.sleep(0.1)
        return n


    async def main() -> None:
        t = asyncio.create_task(poll(1))
        await asyncio.sleep(0)
        t.cancel()


    def stop_all() -> None:
        subprocess.run(["pkill", "-f", "worker"])
    """
)


def _load():
    spec = importlib.util.spec_from_file_location("fix_audit", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(*args, cwd=REPO):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def _tree(root):
    pkg = root / "src" / "tiny" / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "worker.py").write_text(WORKER)
    # CRLF line ends and no newline at the end: --diff must still equal --fix
    (pkg / "crlf.py").write_bytes(b"import time\r\n\r\n\r\nasync def tick():\r\n    time.sleep(1)")
    (pkg / "clean.py").write_text("def f():\n    return 1\n")
    (pkg / "broken.py").write_text("def f(:\n")  # unparsable: listed apart, not a finding
    return root / "src" / "tiny"


def test_audit_of_a_tiny_tree(tmp_path):
    src = _tree(tmp_path)
    before = {p: p.read_bytes() for p in src.rglob("*.py")}
    out = tmp_path / "out"
    proc = _run("--out", str(out), "--scratch", str(tmp_path / "scratch"), "--commit", "tiny=abc123", str(src))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert {p: p.read_bytes() for p in src.rglob("*.py")} == before, "the code base itself must not change"

    summary = json.loads((out / "summary.json").read_text())
    (cb,) = summary["codebases"]
    assert cb["name"] == "tiny" and cb["commit"] == "abc123"
    assert cb["py_files"] == 4 and cb["problems"] == {}
    # an unparsable file is never a finding (listed apart where the JSON output names it)
    assert {x.split(":")[0] for x in cb["unanalysed"]} <= {"pkg/broken.py"}
    assert cb["changed_files"] == 2  # worker.py and crlf.py; clean.py untouched
    rules = summary["rules"]
    assert all(code and code.startswith("SHD") for code in rules)
    assert rules["SHD301"]["findings"] == 2
    assert rules["SHD301"]["safe"] + rules["SHD301"]["unsafe"] == 2 and rules["SHD301"]["read"] == "all"
    assert rules["SHD601"] == {"findings": 1, "safe": 0, "unsafe": 0, "none": 1, "read": "all"}
    assert rules["SHD102"]["findings"] == 1
    fixable = sum(r["safe"] + r["unsafe"] for r in rules.values())
    assert cb["fixable"] == fixable and cb["fixes_applied"] == fixable
    assert cb["findings"] == fixable + 1 and cb["findings_left"] == 1 and cb["left_codes"] == {"SHD601": 1}
    assert cb["helpers"].get("runtime_guard.supervise") == 1  # SHD102's fix, resolved and bound

    # the table is printed and written
    for text in (proc.stdout, (out / "summary.md").read_text()):
        assert "| SHD601 | 1 | 0 | 0 | 1 | all |" in text
        assert "| tiny | abc123 | 4 |" in text and "pass |" in text

    # one hunk per fix, each the finding's edits alone on the original file
    shd301 = (out / "hunks" / "SHD301.txt").read_text()
    assert "=== SHD301 #0 " in shd301 and "=== SHD301 #1 " in shd301 and "#2" not in shd301
    assert "+    await asyncio.sleep(0.1)\n" in shd301 and "in async def poll" in shd301
    assert "-    time.sleep(1)" in shd301  # the CRLF file's hunk
    assert "runtime_guard.supervise" not in shd301  # SHD102's edit is not in SHD301's hunk
    shd102 = (out / "hunks" / "SHD102.txt").read_text()
    assert "=== SHD102 #0 " in shd102 and "runtime_guard" in shd102 and "asyncio.sleep(0.1)" not in shd102
    shd601 = (out / "hunks" / "SHD601.txt").read_text()
    assert "findings with no fix (1)" in shd601 and "tiny pkg/worker.py:18:" in shd601
    data = json.loads((out / "hunks" / "all.json").read_text())
    assert {r["code"] for r in data["SHD301"]} == {"SHD301"} and all(r["alone"] == "ok" for r in data["SHD301"])
    combined = (out / "hunks" / "_combined.txt").read_text()
    assert "functions where fixes of two or more rules land" in combined


FAKE_LINTER = textwrap.dedent(
    """\
    # A stand-in linter: reports one finding whose fix breaks the file, prints no diff, and its
    # --fix appends a line on every run (so it is not idempotent either).
    import json, sys
    args = sys.argv[1:]
    path = "mod.py"
    if "--version" in args:
        print("fake 0"); sys.exit(0)
    if "--fix" in args:
        with open(path, "a") as fh:
            fh.write("def broken(:\\n")
        if "json" in args:
            print("[]")
        else:
            print("Found 1 finding (1 fixed, 0 remaining).")
        sys.exit(0)
    if "--diff" in args:
        sys.exit(0)
    edit = {"content": "def broken(:\\n", "location": {"line": 2, "column": 1}, "end_location": {"line": 2, "column": 1}}
    print(json.dumps([{"code": "SHD999", "name": "x", "message": "m", "path": path, "line": 1, "column": 1,
                       "end_line": 1, "end_column": 2,
                       "fix": {"applicability": "safe", "message": "break it", "edits": [edit]}},
                      {"code": None, "name": "error", "message": "cannot parse", "path": "bad.py", "line": 1,
                       "column": 1, "end_line": 1, "end_column": 1, "fix": None}]))
    sys.exit(1)
    """
)


def test_each_check_can_fail(tmp_path):
    src = tmp_path / "cb"
    src.mkdir()
    (src / "mod.py").write_text("x = 1\n")
    fake = tmp_path / "fake_linter.py"
    fake.write_text(FAKE_LINTER)
    out = tmp_path / "out"
    proc = _run("--out", str(out), "--linter", f"{sys.executable} {fake}", str(src))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    problems = summary["codebases"][0]["problems"]
    assert summary["codebases"][0]["unanalysed"] == ["bad.py: cannot parse"] and list(summary["rules"]) == ["SHD999"]
    assert set(problems) == {"fixed file does not parse/compile", "not idempotent (second --fix changed)",
                             "--diff differs from --fix", "a fix alone does not apply/parse"}
    assert "FAIL:" in proc.stdout and "mod.py: ast.parse" in proc.stdout
    assert "!!! ast.parse" in (out / "hunks" / "SHD999.txt").read_text()


def test_bad_input_is_a_message_not_a_traceback(tmp_path):
    proc = _run("--out", str(tmp_path / "o"), str(tmp_path / "missing"))
    assert proc.returncode == 2 and "is not a folder" in proc.stderr and "Traceback" not in proc.stderr
    proc = _run("--out", str(tmp_path / "o"), "--commit", "nope", str(tmp_path))
    assert proc.returncode == 2 and "NAME=SHA" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("old,new", [
    ("a\nb\nc\n", "a\nB\nc\nd\n"),
    ("a\nb", "a\nb\nc"),          # no newline at the end, before and after
    ("a\r\nb\r\n", "x\r\na\r\nb\r\n"),
    ("", "import x\n"),
    ("a\n" * 30, "z\n" + "a\n" * 14 + "m\n" + "a\n" * 15),
])
def test_diff_round_trip(old, new):
    fa = _load()
    assert fa.patch_text(old, fa.parse_diff(fa.unified("p.py", old, new, context=3))["p.py"]) == new


def test_apply_edits_both_spellings():
    fa = _load()
    text = "a\nb\nc\n"
    for key in ("line", "row"):
        edits = [{"content": "X\n", "location": {key: 2, "column": 1}, "end_location": {key: 3, "column": 1}},
                 {"content": "top\n", "location": {key: 1, "column": 1}, "end_location": {key: 1, "column": 1}}]
        assert fa.apply_edits(text, edits) == "top\na\nX\nc\n"


def test_runtime_guard_calls_are_checked():
    fa = _load()
    old = "import asyncio\n\nasync def f(t):\n    t.cancel()\n"
    good = ("import asyncio\nimport runtime_guard\n\nasync def f(t):\n"
            "    await runtime_guard.cancel_and_wait(t, timeout=30)\n")
    assert fa.guard_api(old, good) == ([], {"runtime_guard.cancel_and_wait": 1})
    bad = ("import asyncio\nimport runtime_guard\n\nasync def f(t):\n"
           "    runtime_guard.cancel_and_wait(t, timeout=30)\n"
           "    runtime_guard.supervise(t, bogus=1)\n"
           "    runtime_guard.no_such_helper(t)\n")
    problems, _ = fa.guard_api(old, bad)
    assert len(problems) == 3, problems
    assert any("cancel_and_wait is a coroutine function, called without await" in p for p in problems)
    assert any("do not bind" in p and "supervise" in p for p in problems)
    assert any("no_such_helper does not resolve" in p for p in problems)
