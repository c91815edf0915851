"""Shared by the SHD102 `asyncio.wait` behaviour tests: one program of shapes, each a function that
spawns tasks of which one raises `RuntimeError("lost 1")`; its flagged lines; and each shape run
for real in a subprocess."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

HEAD = '''
import asyncio
import gc
import sys


async def boom(i):
    await asyncio.sleep(0.01 * i)
    if i == 1:
        raise RuntimeError(f"lost {i}")
    return i

'''

TAIL = '''

if __name__ == "__main__":
    shape = globals()[sys.argv[1]]
    if asyncio.iscoroutinefunction(shape):
        asyncio.run(shape())
    else:
        shape()
    gc.collect()
    print("finished normally")
'''


def program(shapes: str) -> str:
    """The runnable program: ``shapes`` (function definitions, a flagged spawn line ends with
    ``# lost``) between the tasks' coroutine and the entry point that runs ``argv[1]``."""
    return HEAD + textwrap.dedent(shapes).strip("\n") + "\n" + TAIL


def spawn_lines(source: str, shapes: list[str]) -> set[int]:
    """The line of the first spawn in each of ``shapes``' functions."""
    lines = source.splitlines()
    found = set()
    for shape in shapes:
        start = next(i for i, line in enumerate(lines) if re.match(rf"(async )?def {shape}\(", line))
        found.add(next(i for i in range(start, len(lines)) if "create_task(" in lines[i]) + 1)
    return found


def marked_lines(source: str) -> set[int]:
    return {i for i, line in enumerate(source.splitlines(), 1) if line.endswith("# lost")}


def assert_lost_or_raised(tmp_path, source: str, lost: list[str], observed: list[str]) -> None:
    """Lost shapes: the program goes on as if nothing failed (status 0, "finished normally"; at
    most the garbage collector's log line). Observed shapes: the error is raised (status 1)."""
    path = tmp_path / "waits.py"
    path.write_text(source)
    for shape in lost + observed:
        run = subprocess.run([sys.executable, str(path), shape], cwd=tmp_path, capture_output=True, text=True,
                             timeout=60)
        raised = "RuntimeError: lost 1" in run.stderr and "never retrieved" not in run.stderr
        if shape in lost:
            assert (run.returncode, run.stdout.splitlines()[-1], raised) == (0, "finished normally", False), \
                (shape, run.stderr)
        else:
            assert run.returncode == 1 and raised and "finished normally" not in run.stdout, (shape, run.stderr)
