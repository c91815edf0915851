"""The command line under concurrency: a worker pool that survives a crashing file, a
cache that survives concurrent and killed runs, a corrupt cache that is ignored with a
warning. Real subprocesses, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HAZARD = "import sys\nimport threading\n\n\ndef pump():\n    sys.exit(3)\n\n\nthreading.Thread(target=pump).start()\n"


def _cmd(*args) -> list[str]:
    return [sys.executable, "-m", "shutdown_lint", "--isolated", "--select", "ALL", "--output-format", "json", *args]


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=REPO, NO_COLOR="1")


def _run(cwd, *args, timeout=180) -> subprocess.CompletedProcess:
    return subprocess.run(_cmd(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_env())


def _project(root, n=40):
    for i in range(n):
        body = HAZARD if i % 2 == 0 else f"import asyncio\n\nasync def f{i}():\n    await asyncio.sleep({i})\n"
        (root / "pkg" / f"m{i:03d}.py").parent.mkdir(parents=True, exist_ok=True)
        (root / "pkg" / f"m{i:03d}.py").write_text(body + "\n# padding\n" * 50)
    # files that crash or trip the parser must not take the pool down with them
    # a thread and an exit: words a rule examines (files no rule can examine are not syntax-checked)
    examined = b"import threading\nthreading.Thread(target=print)\n"
    (root / "pkg" / "deep.py").write_bytes(examined + b"import sys\nsys.exit(0)\nx = a" + b".b" * 12_000 + b"\n")
    (root / "pkg" / "nul.py").write_bytes(examined + b"import sys\x00\nsys.exit(0)\n")
    return root


def _findings(proc) -> list[tuple[str, int, str]]:
    return _of(json.loads(proc.stdout or "[]"))


def _of(entries: list[dict]) -> list[tuple[str, int, str]]:
    """Findings only: the JSON output also lists the files that could not be analysed (code null)."""
    return sorted((os.path.basename(d["path"]), d["line"], d["code"]) for d in entries if d.get("code") is not None)


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return [int(c) for c in fh.read().split()]
    except OSError:
        return []  # no /proc (macOS): the check below has nothing to look at


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has exited
    except OSError:
        return False


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_pool_survives_bad_files_and_cache_survives_concurrent_and_killed_runs(tmp_path):
    root = _project(tmp_path)
    cache = tmp_path / "cache"
    reference = _run(root, "--no-cache", "--jobs", "1", ".")
    assert reference.returncode == 2, reference.stderr  # deep.py and nul.py cannot be analysed
    expected = _findings(reference)
    assert len(expected) == 20
    assert "deep.py:1:1:" in reference.stderr and "nul.py:" in reference.stderr

    # three runs at once on one cache directory, plus one killed while it works
    victim = subprocess.Popen(_cmd("--cache-dir", str(cache), "--jobs", "2", "."), cwd=root,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env())
    racers = [subprocess.Popen(_cmd("--cache-dir", str(cache), "--jobs", "2", "."), cwd=root,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env())
              for _ in range(3)]
    time.sleep(1.5)
    workers = _children(victim.pid)
    victim.send_signal(signal.SIGKILL)
    victim.wait(30)
    # its pool workers must not outlive it (they would wait on the pool's queue forever)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and any(_alive(w) for w in workers):
        time.sleep(0.2)
    assert not [w for w in workers if _alive(w)], f"pool workers of the killed run still alive: {workers}"
    for proc in racers:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 2, err
        assert _of(json.loads(out)) == expected
        assert "warning: ignoring" not in err, err  # no run ever saw a half-written cache
    leftovers = [p for p in os.listdir(cache) if p.startswith(".tmp-")]
    # the killed run may leave its temporary file, never a torn index
    assert len(leftovers) <= 1, leftovers

    warm = _run(root, "--cache-dir", str(cache), "--jobs", "2", ".")
    assert warm.returncode == 2 and _findings(warm) == expected
    assert "warning" not in warm.stderr, warm.stderr


@pytest.mark.timeout(180)
def test_corrupt_cache_is_ignored_with_a_warning(tmp_path):
    root = _project(tmp_path, n=6)
    cache = tmp_path / "cache"
    first = _run(root, "--cache-dir", str(cache), ".")
    index = [p for p in os.listdir(cache) if p.startswith("results-")]
    assert len(index) == 1
    expected = _findings(first)
    for garbage in (b"{\"format\": 1, \"files\": {\"x\": ", b"\x00\xff" * 100, b"[]", b""):
        (cache / index[0]).write_bytes(garbage)
        again = _run(root, "--cache-dir", str(cache), ".")
        assert again.returncode == first.returncode and _findings(again) == expected
        assert "warning: ignoring" in again.stderr and "cache" in again.stderr, again.stderr
    # entries of the wrong shape are skipped one by one, the others still serve
    data = {"format": 1, "version": "x", "files": {str(root / "pkg" / "m000.py"): ["bad"], "zz": 3}}
    (cache / index[0]).write_text(json.dumps(data))
    again = _run(root, "--cache-dir", str(cache), ".")
    assert _findings(again) == expected


@pytest.mark.timeout(180)
def test_worker_that_dies_on_a_file_is_reported_and_the_run_goes_on(tmp_path):
    """A real crash in the worker: SIGSEGV from libcst's native parser before this issue's
    nesting guard, simulated here by a file whose analysis kills its worker process
    (``faulthandler._sigsegv`` from a rule hook, via sitecustomize in the workers only)."""
    root = _project(tmp_path, n=12)
    (root / "pkg" / "boom.py").write_text("import sys\nsys.exit(0)\nSEGFAULT_HERE = 1\n")
    hook = tmp_path / "hook"
    hook.mkdir()
    # a test-only rule, registered through the package path of shutdown_lint.rules
    (hook / "sitecustomize.py").write_text(
        "import faulthandler, libcst as cst\n"
        "from shutdown_lint.rule import Rule\n"
        "import shutdown_lint.registry as reg\n"
        "class Segv(Rule):\n"
        "    code = 'SHD999'\n    name = 'test-segv'\n    summary = 'test only'\n    triggers = ('SEGFAULT_HERE',)\n"
        "    def visit_Name(self, node):\n"
        "        if node.value == 'SEGFAULT_HERE':\n"
        "            faulthandler.disable()\n"
        "            faulthandler._sigsegv()\n"
        "_orig = reg.all_rules\n"
        "reg.all_rules = lambda: (*_orig(), Segv)\n"
    )
    env = dict(_env(), PYTHONPATH=f"{hook}{os.pathsep}{REPO}")
    proc = subprocess.run(_cmd("--no-cache", "--jobs", "2", "--no-prefilter", "."), cwd=root, capture_output=True,
                          text=True, timeout=150, env=env)
    assert proc.returncode == 2, proc.stderr
    assert "boom.py:1:1: the analysis crashed its worker process; file skipped" in proc.stderr, proc.stderr
    assert len(_findings(proc)) == 6  # every other file was still analysed


def test_batches_cover_every_file_once_largest_first_with_a_small_tail():
    """Tasks for the pool: every file exactly once, in the largest-first order, at most
    BATCH_BYTES or BATCH_FILES per task, and the last TAIL_FILES in tasks of TAIL_BATCH."""
    from shutdown_lint import runner

    sizes = {i: (i * 7919) % 50_000 + 10 for i in range(5000)}
    order = sorted(sizes, key=lambda i: -sizes[i])
    batches = runner._batches(order, sizes)
    assert [i for b in batches for i in b] == order
    assert all(len(b) <= runner.BATCH_FILES for b in batches)
    assert all(len(b) == 1 or sum(sizes[i] for i in b[:-1]) < runner.BATCH_BYTES for b in batches)
    tail = set(order[-runner.TAIL_FILES:])
    assert all(len(b) <= runner.TAIL_BATCH for b in batches if tail.intersection(b))
    assert all(not tail.intersection(b) or set(b) <= tail for b in batches)
    assert runner._batches(order[:10], sizes, most=1) == [[i] for i in order[:10]]
