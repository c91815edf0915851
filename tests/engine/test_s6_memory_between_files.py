"""Memory a file's analysis leaves behind is given back before the next file (issue 30,
peak memory per worker): ``runner.after_file`` cuts the candidate tier's cached ``ast`` trees
to the newest ones spanning ``KEEP_TREE_LINES`` lines, and asks the C allocator to return
its free memory once the process's peak has grown by ``TRIM_STEP_KB``.

Measured (bench/memory_peak.py, ray+torch at -j2): a 500 KB file's tree (38 MB) stayed
cached while the same worker's next big file was parsed by libcst, so the largest worker
peaked at 235 MB or 195 MB depending on which worker took which file; with the release, 168-172.
The peaks themselves are the benchmark's to state; here: what is kept, and that results do
not change."""

from __future__ import annotations

import ast
import os
import subprocess
import sys

from shutdown_lint import runner

from .conftest import REPO, write

#: a file the candidate tier parses with ``ast`` (a task created and awaited: rules ask about it)
BIG = ("import asyncio\n\n\nasync def work():\n    await asyncio.sleep(0)\n\n\n"
       "async def main():\n    t = asyncio.create_task(work())\n    await t\n\n\n"
       + "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(1500)))
SMALL = ("import asyncio\n\n\nasync def go():\n    asyncio.create_task(asyncio.sleep(1))\n")

PROGRAM = r"""
import sys
from shutdown_lint import runner
from shutdown_lint.prefilter import ast_tree
from shutdown_lint.cli import main

if sys.argv[1] == "keep":
    runner.KEEP_TREE_LINES = 10 ** 9  # the cache as before: nothing released between files
rc = main(sys.argv[2:])
sys.stdout.flush()
print("TREES", sorted(t.module.body[-1].end_lineno for t in ast_tree._trees.values() if t is not None))
"""


def _run(root, mode: str, *args: str) -> tuple[str, list[int]]:
    env = {**os.environ, "PYTHONPATH": REPO}
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode, "--no-cache", "--exit-zero",
                           "--output-format", "json", *args], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out, _, trees = done.stdout.rpartition("TREES ")
    return out, ast.literal_eval(trees)  # a list of ints printed by PROGRAM


def test_a_big_files_tree_is_not_kept_for_the_next_file(tmp_path):
    root = tmp_path / "proj"
    write(root / "a_big.py", BIG)
    write(root / "b_small.py", SMALL)
    big_lines = BIG.count("\n")
    released, kept_trees = _run(root, "release", "-j1", "a_big.py", "b_small.py")
    kept, all_trees = _run(root, "keep", "-j1", "a_big.py", "b_small.py")
    assert released == kept  # a cache only: the same findings
    assert '"code"' in released  # the files were linted (something found)
    assert big_lines > runner.KEEP_TREE_LINES
    assert max(all_trees) >= big_lines - 2  # without the release the big tree stays cached
    assert kept_trees and max(kept_trees) < big_lines // 2  # with it, only the small file's tree
    assert sum(kept_trees) <= runner.KEEP_TREE_LINES


def test_same_output_at_j2_with_a_big_file(tmp_path):
    root = tmp_path / "proj"
    write(root / "a_big.py", BIG)
    for i in range(12):  # enough files for a pool (runner.SERIAL_THRESHOLD)
        write(root / f"m{i:02}.py", SMALL.replace("go", f"go{i}"))
    released, _ = _run(root, "release", "-j2", ".")
    kept, _ = _run(root, "keep", "-j2", ".")
    assert released == kept


def test_release_keeps_the_newest_trees_within_the_budget():
    from shutdown_lint.prefilter import ast_tree

    saved = ast_tree._trees.copy()
    try:
        ast_tree._trees.clear()
        sources = [b"x = 1\n" * n + b"# %d\n" % n for n in (3000, 10, 20)]  # oldest first
        for s in sources:
            ast_tree.parse(s)
        ast_tree.release_trees(100)
        assert ast_tree.cached(sources[0]) is None
        assert ast_tree.cached(sources[1]) is not None and ast_tree.cached(sources[2]) is not None
        ast_tree.release_trees(15)  # the newest (20 lines) alone is over: nothing kept
        assert not ast_tree._trees
    finally:
        ast_tree._trees.clear()
        ast_tree._trees.update(saved)


def test_give_back_memory_only_after_the_peak_grew():
    before = runner._trimmed_at_kb
    try:
        runner._trimmed_at_kb = 0
        runner._give_back_memory()
        at = runner._trimmed_at_kb
        assert 0 < at <= runner._peak_rss_kb()
        if sys.platform.startswith("linux"):
            assert runner._trim_fn is not None  # looked up: glibc's malloc_trim, or False (musl)
        runner._give_back_memory()  # the peak has not grown by TRIM_STEP_KB since
        assert runner._trimmed_at_kb == at
    finally:
        runner._trimmed_at_kb = before
