"""SHD101 across modules, for real: the sandbox-owning coroutine is a method defined in
another file of the package (on a base class, re-exported through ``__init__.py``); the
driver gathers it. One child fails, the driver ends the process at once (``os._exit``),
and every sibling's sandbox leaks (a marker file left on disk). The command line finds
it only through the project index, names the other file, and its TaskGroup fix leaves no
marker behind.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
N = 6

FILES = {
    "pkg/__init__.py": "from .envs import SandboxEnv\n",
    "pkg/envs/__init__.py": "from .sandbox import SandboxEnv\n",
    "pkg/envs/base.py": '''\
import asyncio
import os
import sys


class BaseEnv:
    async def rollout(self, i, fail_after=None):
        path = os.path.join(sys.argv[1], f"sandbox{i}")
        open(path, "w").close()  # the sandbox exists
        try:
            await asyncio.sleep(fail_after if fail_after is not None else 60)
            if fail_after is not None:
                raise RuntimeError(f"trial {i} failed")
            return i
        finally:
            await asyncio.sleep(0.2)  # async teardown: delete the sandbox
            os.remove(path)
''',
    "pkg/envs/sandbox.py": "from .base import BaseEnv\n\n\nclass SandboxEnv(BaseEnv):\n    pass\n",
    "pkg/driver.py": f'''\
import asyncio
import os
import sys

from . import SandboxEnv

env = SandboxEnv()


async def generate(n):
    # one sandbox per trial
    results = await asyncio.gather(*[env.rollout(i, 0.3 if i == 0 else None) for i in range(n)])
    return results


async def main():
    try:
        await generate({N})
    except Exception as exc:
        print(f"generation failed: {{exc!r}}", file=sys.stderr, flush=True)
        os._exit(1)


if __name__ == "__main__":
    asyncio.run(main())
''',
}


def _write(root: Path) -> None:
    for rel, text in FILES.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _run(root: Path, name: str) -> tuple[subprocess.CompletedProcess, int]:
    markers = root / f"{name}_markers"
    markers.mkdir()
    proc = subprocess.run([sys.executable, "-m", "pkg.driver", str(markers)], cwd=root, capture_output=True,
                          text=True, timeout=60)
    return proc, len(os.listdir(markers))


def _lint(root: Path, *extra: str) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SHUTDOWN_LINT_NO_INDEX", None)
    proc = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD101",
                           "--target-version", "py311", "--output-format", "json", *extra, "pkg"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)
    return json.loads(proc.stdout or "[]")


@pytest.mark.timeout(180)
def test_gather_over_a_sandbox_method_defined_in_another_module(tmp_path):
    _write(tmp_path)
    proc, leaked = _run(tmp_path, "hazard")
    assert proc.returncode == 1 and "trial 0 failed" in proc.stderr, proc.stderr
    assert leaked == N - 1, (leaked, proc.stderr)  # every sibling's sandbox leaked

    found = _lint(tmp_path)
    assert [(d["path"], d["line"]) for d in found] == [("pkg/driver.py", 12)]
    assert "pkg/envs/base.py" in found[0]["message"]  # names the file it relied on

    _lint(tmp_path, "--fix", "--unsafe-fixes")
    fixed = (tmp_path / "pkg" / "driver.py").read_text()
    assert "TaskGroup()" in fixed and "# one sandbox per trial" in fixed
    assert _lint(tmp_path) == []
    proc, leaked = _run(tmp_path, "fixed")
    assert proc.returncode == 1 and "trial 0 failed" in proc.stderr, proc.stderr
    assert leaked == 0, (leaked, proc.stderr)  # the group cancelled the siblings and waited
