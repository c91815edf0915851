"""SHD202 for real, through a chain of calls and methods across modules (issue 28).

The Ctrl+C handler sits in a method of a base class in another module; the ``__main__`` block
calls ``main()``, whose last statement is ``Trainer(...).fit()``, whose last statement is
``self._loop()``. The handler saves and returns: the process exits with status 0 after Ctrl+C
(a scheduler records success). SHD202 finds it only through the project index (call chains to
the entrypoint); its fix (unsafe: ``sys.exit(130)`` ends the handler) makes the interrupted run
exit 130, and a run that is not interrupted prints the same and exits 0 as before.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from signal_driver import signalled

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])))
ENV.pop("SHUTDOWN_LINT_NO_INDEX", None)

FILES = {
    "app/__init__.py": "",
    "app/base.py": '''
        import os
        import time


        class BaseTrainer:
            def _loop(self):
                try:
                    print("ready", flush=True)
                    for _ in range(int(os.environ.get("STEPS", "1000000"))):
                        time.sleep(0.02)  # a training step
                except KeyboardInterrupt:
                    print("interrupted, saving", flush=True)
                print("loop done", flush=True)
    ''',
    "app/trainer.py": '''
        from .base import BaseTrainer


        class Trainer(BaseTrainer):
            def fit(self):
                print("fit", flush=True)
                self._loop()
    ''',
    "run.py": '''
        from app.trainer import Trainer


        def main():
            Trainer().fit()


        if __name__ == "__main__":
            main()
    ''',
}


def _write(root) -> None:
    for rel, text in FILES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def _lint(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD202",
                           *args, "."], cwd=root, env=ENV, capture_output=True, text=True, timeout=120)


def _interrupt(root) -> tuple[int, str]:
    rc, out, _ = signalled(["run.py"], signal.SIGINT, cwd=root, env=ENV, ready=("fit", "ready"))
    return rc, out


def _uninterrupted(root) -> tuple[int, str, str]:
    proc = subprocess.run([sys.executable, "run.py"], cwd=root, env=dict(ENV, STEPS="3"), capture_output=True,
                          text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.timeout(180)
def test_ctrl_c_through_a_method_chain_exits_0_before_and_130_after_the_fix(tmp_path):
    _write(tmp_path)
    found = json.loads(_lint(tmp_path, "--output-format", "json").stdout)
    assert [(d["path"], d["code"]) for d in found] == [("app/base.py", "SHD202")]
    assert "the last call of `Trainer.fit()`" in found[0]["message"]
    # without the project index the chain is not followed (the gap)
    no_index = subprocess.run([sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select",
                               "SHD202", "--output-format", "json", "."], cwd=tmp_path,
                              env=dict(ENV, SHUTDOWN_LINT_NO_INDEX="1"), capture_output=True, text=True, timeout=120)
    assert json.loads(no_index.stdout) == []

    normal_before = _uninterrupted(tmp_path)
    rc, out = _interrupt(tmp_path)
    assert "interrupted, saving" in out and "loop done" in out
    assert rc == 0  # the damage: the interrupted run reports success

    fixed = _lint(tmp_path, "--fix", "--unsafe-fixes")
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "sys.exit(130)" in (tmp_path / "app" / "base.py").read_text()
    assert json.loads(_lint(tmp_path, "--output-format", "json").stdout) == []

    rc, out = _interrupt(tmp_path)
    assert "interrupted, saving" in out and "loop done" not in out
    assert rc == 130
    assert _uninterrupted(tmp_path) == normal_before  # not interrupted: same output, status 0
    assert normal_before[0] == 0
