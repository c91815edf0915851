"""``hard_exit`` in a forked child never runs the parent's ``atexit`` handlers, whatever the
import order (issue 26): here the parent never imports runtime_guard, the child imports it after
the fork. Real ``multiprocessing`` children (fork, forkserver, spawn) in a real subprocess.

A ``fork``/``forkserver`` child's handlers are the parent's (or the fork server's):
``multiprocessing`` ends such a child with ``os._exit``, so a child that calls ``hard_exit`` must
not run them (before: it flushed the parent's "tracker" a second time). A ``spawn`` child's
handlers are its own: ``hard_exit`` runs them, as ``sys.exit`` would.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from rg_testutil import REPO, child_env

pytestmark = pytest.mark.timeout(120)

PROGRAM = textwrap.dedent("""
    import atexit, multiprocessing, os, sys

    def child():
        atexit.register(print, "child's own atexit", flush=True)
        import runtime_guard  # first imported here, after the fork
        runtime_guard.hard_exit(3)

    if __name__ == "__main__":
        assert "runtime_guard" not in sys.modules
        atexit.register(print, "parent atexit (pid %d)" % os.getpid(), flush=True)
        p = multiprocessing.get_context(sys.argv[1]).Process(target=child)
        p.start()
        p.join(60)
        print("child exit", p.exitcode, flush=True)
""")


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_forked_child_skips_the_parents_handlers_whatever_the_import_order(tmp_path, method: str) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(path), method], capture_output=True, text=True, timeout=90,
                       env=child_env(), cwd=str(REPO))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "child exit 3", r.stdout
    # the parent's handler ran once, in the parent, at its own exit
    assert len(lines) == 2 and lines[1].startswith("parent atexit"), r.stdout


def test_a_spawned_child_runs_its_own_handlers(tmp_path) -> None:
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    r = subprocess.run([sys.executable, str(path), "spawn"], capture_output=True, text=True, timeout=90,
                       env=child_env(), cwd=str(REPO))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # spawn re-imports the main module in the child (under __mp_main__): the parent block does
    # not run there, so the child's only handler is the one it registered itself
    assert lines[:2] == ["child's own atexit", "child exit 3"], r.stdout
    assert len(lines) == 3 and lines[2].startswith("parent atexit"), r.stdout
