"""The exit report names a leftover child by its spawn arguments when ``/proc`` gives an empty
command line (a process exiting as the report reads it; one whose argv is empty). CI once saw the
report of ``sleep 120`` come with an empty ``cmdline`` (test_exit_report's every-ending test): read
between the child's state and its command line, a child that was going away. Here a real child
has an empty argv for as long as the test needs (``bash -c "exec -a '' cat"``), in a real run of the
launcher's ``--exit-report``."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rg_testutil import child_env, wait_for_line

pytestmark = [pytest.mark.timeout(120),
              pytest.mark.skipif(shutil.which("bash") is None or not Path("/proc/self/cmdline").exists(),
                                 reason="needs bash (exec -a) and /proc")]

PROGRAM = textwrap.dedent("""
    import os, subprocess, sys, time

    child = subprocess.Popen(["bash", "-c", "exec -a '' cat"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for _ in range(200):  # until bash has exec'd cat with its empty argv
        with open(f"/proc/{child.pid}/cmdline", "rb") as f:
            if f.read() == b"\\0":
                break
        time.sleep(0.05)
    print("ready", child.pid, flush=True)
    sys.stdin.readline()
""")


def test_a_child_with_an_empty_command_line_is_named_by_its_spawn(tmp_path: Path) -> None:
    prog = tmp_path / "leaves_a_child.py"
    prog.write_text(PROGRAM)
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "runtime_guard", "--exit-report", "--json", str(report), str(prog)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=child_env())
    child = None
    try:
        ready = wait_for_line(proc, "ready")
        child = int(ready[-1].split()[1])
        with open(f"/proc/{child}/cmdline", "rb") as f:
            assert f.read() == b"\0"  # what the report reads: an empty command line
        _, err = proc.communicate("\n", timeout=60)
        assert proc.returncode == 0, err
        items = [i for i in json.loads(report.read_text())["items"] if i["kind"] == "child"]
        assert len(items) == 1, items
        assert items[0]["detail"]["pid"] == child
        assert items[0]["detail"]["cmdline"] == "bash -c exec -a '' cat"
        assert f"child process {child} alive: bash -c exec -a '' cat" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if child is not None:
            subprocess.run(["kill", "-9", str(child)], check=False)
