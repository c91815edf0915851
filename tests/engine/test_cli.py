"""The command end to end: exit codes, fixing, encodings, stdin, errors, parallelism."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import CLEAN, HAZARD, run_sub, write

FIXED_LINE = "runtime_guard.hard_exit(3)"


def test_exit_codes(project, cli):
    write(project / "clean.py", CLEAN)
    assert cli(project, "--no-cache", "clean.py").code == 0
    write(project / "bad.py", HAZARD)
    assert cli(project, "--no-cache").code == 1
    assert cli(project, "--no-cache", "--exit-zero").code == 0
    assert cli(project, "--no-cache", "--select", "NOPE").code == 2
    assert cli(project, "--no-cache", "missing.py").code == 2
    assert cli(project, "--no-cache", "--jobs", "0").code == 2
    assert cli(project, "--bogus-flag").code == 2


def test_syntax_error_in_one_of_many_files(project, cli):
    for i in range(12):
        write(project / f"m{i:02}.py", HAZARD if i % 3 == 0 else CLEAN)
    # broken where a rule looks (a thread target calling sys.exit): reported; a file that
    # no rule can examine is not syntax-checked (tests/engine/test_syntax_versions.py)
    write(project / "m05.py", "import sys, threading\ndef broken(:\n    sys.exit(1)\nthreading.Thread(target=broken)\n")
    run = cli(project, "--no-cache", "--output-format", "concise", "--jobs", "2")
    assert run.code == 2
    assert "m05.py:2:" in run.err and "syntax error" in run.err
    flagged = sorted({line.split(":")[0] for line in run.out.splitlines() if "SHD201" in line})
    assert flagged == ["m00.py", "m03.py", "m06.py", "m09.py"]


def test_non_utf8_file_with_coding_cookie_is_linted_and_fixed(project, cli):
    text = "# -*- coding: latin-1 -*-\n# caf\xe9 gr\xfc\xdfe\n" + HAZARD
    path = write(project / "legacy.py", text.encode("latin-1"))
    run = cli(project, "--no-cache", "--output-format", "concise")
    assert run.code == 1 and "legacy.py:9:5: SHD201" in run.out
    run = cli(project, "--no-cache", "--fix")
    assert run.code == 0, run.err
    data = path.read_bytes()
    assert b"caf\xe9 gr\xfc\xdfe" in data and FIXED_LINE.encode() in data


def test_fix_preserves_crlf_and_bom(project, cli):
    source = HAZARD.replace("\n", "\r\n").encode("utf-8-sig")
    path = write(project / "win.py", source)
    run = cli(project, "--no-cache", "--fix", "--show-fixes", "--output-format", "concise")
    assert run.code == 0, run.out + run.err
    assert "fixed 1 in win.py" in run.out and "Found 1 finding (1 fixed, 0 remaining)." in run.out
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert FIXED_LINE.encode() in data
    assert data.count(b"\r\n") == data.count(b"\n")  # every newline is still CRLF


def test_fix_that_would_not_parse_leaves_file_byte_identical(project, cli, extra_rules):
    source = b"import os\n\n\ndef f():\n    BREAKME()  # keep me\n"
    path = write(project / "f.py", source)
    before = os.stat(path)
    run = cli(project, "--no-cache", "--select", "SHD991", "--fix", "--output-format", "concise")
    assert run.code == 1
    assert path.read_bytes() == source and os.stat(path).st_ino == before.st_ino
    assert "fix skipped" in run.err
    assert not [p for p in os.listdir(project) if p.startswith(".shutdown-lint-")]  # no temp file left


def test_safe_and_unsafe_fixes_and_diff(project, cli):
    path = write(project / "bad.py", HAZARD)
    run = cli(project, "--no-cache", "--diff")
    assert run.code == 1
    assert "--- a/bad.py" in run.out and "+    " + FIXED_LINE in run.out and "+import runtime_guard" in run.out
    assert path.read_text() == HAZARD  # --diff writes nothing
    clean = write(project / "c.py", CLEAN)
    assert cli(project, "--no-cache", "--diff", clean).code == 0
    run = cli(project, "--no-cache", "--fix", "--output-format", "concise")
    assert run.code == 0 and FIXED_LINE in path.read_text()
    assert cli(project, "--no-cache", "--fix").code == 0  # idempotent


def test_unsafe_fixes_need_the_flag(project, cli):
    write(project / "pyproject.toml", '[tool.shutdown-lint]\nselect = ["SHD202"]\n')
    code = ("import sys\n\n\ndef main():\n    try:\n        run()\n    except KeyboardInterrupt:\n"
            "        sys.exit(0)\n")
    path = write(project / "drv.py", code)
    run = cli(project, "--no-cache", "--output-format", "json")
    items = json.loads(run.out)
    assert items and items[0]["fix"], "SHD202 must flag this snippet and offer a fix"
    applicability = items[0]["fix"]["applicability"]
    cli(project, "--no-cache", "--fix")
    changed = path.read_text() != code
    assert changed == (applicability == "safe")
    cli(project, "--no-cache", "--fix", "--unsafe-fixes")
    assert path.read_text() != code


def test_parallel_and_serial_runs_give_identical_output(project, cli):
    for i in range(30):
        write(project / f"pkg{i % 3}" / f"mod{i:02}.py", HAZARD if i % 2 else CLEAN)
    write(project / "pkg1" / "broken.py", "import sys, threading\nthreading.Thread(target=sys.exit)\nx = (\n")
    outputs = []
    for jobs in ("1", "2"):
        for fmt in ("concise", "json"):
            run = cli(project, "--no-cache", "--jobs", jobs, "--output-format", fmt)
            assert run.code == 2
            outputs.append((fmt, run.out, run.err))
    assert outputs[0] == outputs[2] and outputs[1] == outputs[3]
    assert outputs[0][1].count("SHD201") == 15


def test_worker_crash_reports_that_file_and_goes_on(project, cli, extra_rules):
    for i in range(20):
        write(project / f"m{i:02}.py", HAZARD)
    write(project / "m07.py", HAZARD + "CRASHME()\n")
    run = cli(project, "--no-cache", "--select", "SHD201,SHD992", "--jobs", "2", "--output-format", "concise")
    assert run.code == 2
    assert "m07.py:1:1: the analysis crashed its worker process" in run.err
    flagged = {line.split(":")[0] for line in run.out.splitlines() if "SHD201" in line}
    assert flagged == {f"m{i:02}.py" for i in range(20)} - {"m07.py"}


def test_target_version_from_requires_python(project, cli, extra_rules):
    write(project / "old.py", "OLDCALL()\n")
    write(project / "pyproject.toml", '[project]\nname = "x"\nrequires-python = ">=3.10"\n[tool.shutdown-lint]\n')
    run = cli(project, "--no-cache", "--select", "SHD993", "--output-format", "json")
    assert json.loads(run.out)[0]["fix"] is None
    write(project / "pyproject.toml", '[project]\nname = "x"\nrequires-python = ">=3.11"\n[tool.shutdown-lint]\n')
    run = cli(project, "--no-cache", "--select", "SHD993", "--output-format", "json")
    assert json.loads(run.out)[0]["fix"]["applicability"] == "safe"
    run = cli(project, "--no-cache", "--select", "SHD993", "--output-format", "json", "--target-version", "py310")
    assert json.loads(run.out)[0]["fix"] is None
    assert cli(project, "--no-cache", "--target-version", "py27").code == 2


def test_stdin(project):
    proc = run_sub(project, "--no-cache", "--output-format", "concise", "--stdin-filename", "svc/x.py", "-",
                   input=HAZARD.encode())
    assert proc.returncode == 1 and proc.stdout.decode().startswith("svc/x.py:7:5: SHD201")
    proc = run_sub(project, "--fix", "-", input=HAZARD.encode())
    assert proc.returncode == 0
    assert proc.stdout.decode() == HAZARD.replace("sys.exit(3)", FIXED_LINE).replace(
        "import threading\n", "import threading\nimport runtime_guard\n")
    proc = run_sub(project, "--output-format", "concise", "-", input=b"import sys\nasync def f(:\n    sys.exit(1)\n")
    assert proc.returncode == 2 and b"-:2:" in proc.stderr and b"syntax error" in proc.stderr
    proc = run_sub(project, "--diff", "-", input=HAZARD.encode())
    assert proc.returncode == 1 and b"+import runtime_guard" in proc.stdout


def test_selection_by_name_prefix_and_ignore(project, cli):
    write(project / "bad.py", HAZARD)
    for selector in ("sys-exit-in-task", "SHD2", "shd201", "ALL"):
        run = cli(project, "--no-cache", "--select", selector, "--output-format", "concise")
        assert run.code == 1 and "SHD201" in run.out, selector
    assert cli(project, "--no-cache", "--select", "ALL", "--ignore", "SHD2", "bad.py").code == 0
    assert cli(project, "--no-cache", "--extend-select", "SHD201", "--ignore", "sys-exit-in-task").code == 0


def test_per_file_ignores(project, cli):
    write(project / "tests/test_x.py", HAZARD)
    write(project / "src/app.py", HAZARD)
    run = cli(project, "--no-cache", "--output-format", "concise", "--per-file-ignores", "tests/*:SHD2")
    assert "src/app.py" in run.out and "tests/test_x.py" not in run.out
    with open(project / "pyproject.toml", "a") as fh:
        fh.write('[tool.shutdown-lint.per-file-ignores]\n"src/*" = ["sys-exit-in-task"]\n')
    run = cli(project, "--no-cache", "--output-format", "concise")
    assert "src/app.py" not in run.out and "tests/test_x.py" in run.out
    # and the cache keeps them apart
    assert cli(project, "--output-format", "concise").out == run.out
    run2 = cli(project, "--output-format", "concise", "--per-file-ignores", "tests/*:SHD201")
    assert run2.code == 0


def test_python_m_and_console_script(project):
    write(project / "bad.py", HAZARD)
    proc = run_sub(project, "--no-cache", "--output-format", "concise")
    assert proc.returncode == 1 and b"bad.py:7:5: SHD201" in proc.stdout


@pytest.mark.timeout(120)
def test_progress_bar_only_on_a_terminal_for_large_runs(project):
    import pty
    import select
    import subprocess
    import sys

    from .conftest import REPO

    for i in range(310):
        write(project / f"pkg{i % 10}" / f"m{i:03}.py", "x = 1\n")

    def stderr_of(*args, tty: bool) -> bytes:
        env = dict(os.environ, PYTHONPATH=REPO, COLUMNS="100")
        if not tty:
            return subprocess.run([sys.executable, "-m", "shutdown_lint", *args], cwd=project, env=env,
                                  capture_output=True, timeout=100).stderr
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "shutdown_lint", *args], cwd=project, env=env,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        chunks = []
        while True:
            ready, _, _ = select.select([master], [], [], 100)
            if not ready:
                break
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        proc.wait(timeout=100)
        os.close(master)
        return b"".join(chunks)

    assert b"linting" in stderr_of("--no-cache", "--jobs", "2", tty=True)
    assert b"linting" not in stderr_of("--no-cache", "--jobs", "2", tty=False)
    assert b"linting" not in stderr_of("--no-cache", "--jobs", "2", "-q", tty=True)


def test_a_closed_pipe_ends_quietly(project):
    """`shutdown-lint ... | head`: no traceback when the reader goes away."""
    import subprocess
    import sys

    for i in range(120):  # ~100 KB of JSON: more than a pipe buffer, so the writer must hit the closed end
        write(project / f"m{i:03}.py", HAZARD)
    proc = subprocess.Popen([sys.executable, "-m", "shutdown_lint", "--no-cache", "--output-format", "json", "."],
                            cwd=project, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.read(10)
    proc.stdout.close()  # like `head -c 10`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
