"""SHD602 for a `multiprocessing` context known only by its declared type.

`ctx: multiprocessing.context.SpawnContext` (a parameter, a variable, `self.ctx`, a return
annotation) makes `ctx.Process(...)` a factory just as `ctx = mp.get_context("spawn")` does.
Before, the rule compared the receiver's type with `get_context`'s value only, so the
annotation hid the child (annotating the context made the finding disappear).

Measured for real: a spawn-context child whose work takes 3 s and then writes a marker file;
the parent takes the context as an annotated parameter, starts the child and raises. Hazard:
the parent's exit handler joins the child, so when the parent has exited the marker is
there (it waited for the whole of the child's work). Fixed (`finally: terminate(); join()`):
the parent exits at once, the marker never appears and the child is gone.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD602",), target_version="py311")
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

HAZARD = textwrap.dedent('''
    import multiprocessing
    import multiprocessing.context
    import sys
    import time

    def produce(marker):
        time.sleep(3)  # a data loader's work
        open(marker, "w").close()

    def train(marker, ctx: multiprocessing.context.SpawnContext):
        loader = ctx.Process(target=produce, args=(marker,))
        loader.start()
        print(loader.pid, flush=True)
        raise RuntimeError("fit failed")
        loader.join()

    if __name__ == "__main__":
        train(sys.argv[1], multiprocessing.get_context("spawn"))
''')

FIXED = HAZARD.replace('''
    print(loader.pid, flush=True)
    raise RuntimeError("fit failed")
    loader.join()
''', '''
    try:
        print(loader.pid, flush=True)
        raise RuntimeError("fit failed")
    finally:
        loader.terminate()
        loader.join()
''')


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_annotated_context_is_flagged_and_the_fix_is_not():
    assert FIXED != HAZARD
    diags = lint_source(HAZARD.encode(), "hazard.py", SETTINGS).diagnostics
    assert [(d.code, d.line) for d in diags] == [("SHD602", 12)]  # loader = ctx.Process(...)
    assert "joins every non-daemon child" in diags[0].message
    assert lint_source(FIXED.encode(), "fixed.py", SETTINGS).diagnostics == []


@pytest.mark.timeout(120)
@pytest.mark.parametrize("program", ["hazard", "fixed"])
def test_annotated_context_child_holds_the_parent_at_exit(tmp_path, program):
    path = tmp_path / f"{program}.py"
    path.write_text(HAZARD if program == "hazard" else FIXED)
    marker = tmp_path / "done"
    run = subprocess.run([sys.executable, str(path), str(marker)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    pid = int(run.stdout.split()[0])
    assert run.returncode == 1 and "RuntimeError: fit failed" in run.stderr
    try:
        if program == "hazard":
            assert marker.exists(), "the parent exited before its child's work was done"
        else:
            time.sleep(4)  # longer than the child's work: had it lived on, the marker would be there
            assert not marker.exists() and not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, 9)
