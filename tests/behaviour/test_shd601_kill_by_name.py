"""SHD601 kill-by-name, for real: a bystander process with the same command line (another
run's server on a shared node) is started by the test; the program under test starts its own
servers and cleans up.

1. Hazard (flagged by SHD601): cleanup with ``pkill -f <server pattern>``: the bystander is
   killed along with the program's own server.
2. The remedy (SHD601 has no autofix; this is the code its page shows): children started with
   ``start_new_session=True`` and ended with ``runtime_guard.terminate_process_groups``:
   SIGTERM to each child's process group, a grace period, then SIGKILL. The child that handles
   SIGTERM cleans up and exits; the one that ignores SIGTERM, and the grandchild it started,
   are SIGKILLed after the grace period; the bystander survives.

Every process here carries a unique marker in its command line, so ``pkill -f`` cannot reach
anything else on the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD601",), target_version="py311")

SERVER = "import sys, time; print('READY', flush=True); time.sleep(120)"

HAZARD = textwrap.dedent(
    '''
    import os
    import subprocess
    import sys

    MARKER = os.environ["SERVER_MARKER"]
    SERVER = "import sys, time; print('READY', flush=True); time.sleep(120)"


    def cleanup():
        subprocess.run(["pkill", "-f", MARKER])


    if __name__ == "__main__":
        server = subprocess.Popen([sys.executable, "-c", SERVER, MARKER], stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "READY"
        cleanup()
        server.wait(timeout=30)
        print("DONE", flush=True)
    '''
).lstrip()

REMEDY = textwrap.dedent(
    '''
    import os
    import subprocess
    import sys

    import runtime_guard

    MARKER = os.environ["SERVER_MARKER"]
    OUT = sys.argv[1]
    GRACEFUL = f"""
    import signal, sys, time
    def on_term(signum, frame):
        open({OUT!r} + "/graceful-cleaned", "w").close()
        sys.exit(0)
    signal.signal(signal.SIGTERM, on_term)
    print("READY", flush=True)
    for _ in range(2400):  # short sleeps: on_term runs between them (one long sleep could hold it)
        time.sleep(0.05)
    """
    STUBBORN = f"""
    import signal, subprocess, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", sys.argv[1]])
    open({OUT!r} + "/grandchild.pid", "w").write(str(child.pid))
    print("READY", flush=True)
    time.sleep(120)
    """


    def start(code):
        proc = subprocess.Popen([sys.executable, "-c", code, MARKER], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        assert proc.stdout.readline().strip() == "READY"
        return proc


    if __name__ == "__main__":
        servers = [start(GRACEFUL), start(STUBBORN)]
        codes = runtime_guard.terminate_process_groups(servers, grace=2)
        print("CODES", *codes, flush=True)
    '''
).lstrip()


def _codes(source: str) -> list[str]:
    result = lint_source(source.encode(), "prog.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _dead(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")  # a zombie waits for its reaper
    except FileNotFoundError:
        return True


@pytest.fixture
def bystander():
    marker = f"shd601-rollout-server-{uuid.uuid4().hex}"
    proc = subprocess.Popen([sys.executable, "-c", SERVER, marker], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "READY"
    try:
        yield marker, proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _run(source: str, tmp_path: Path, marker: str) -> subprocess.CompletedProcess:
    prog = tmp_path / "prog.py"
    prog.write_text(source)
    return subprocess.run([sys.executable, str(prog), str(tmp_path)], env={**ENV, "SERVER_MARKER": marker},
                          capture_output=True, text=True, timeout=60)


@pytest.mark.timeout(90)
@pytest.mark.skipif(shutil.which("pkill") is None, reason="needs pkill (procps)")
def test_pkill_by_pattern_kills_the_bystander(tmp_path, bystander):
    marker, other = bystander
    assert _codes(HAZARD) == ["SHD601"]
    r = _run(HAZARD, tmp_path, marker)
    assert r.returncode == 0 and "DONE" in r.stdout, r.stderr
    other.wait(timeout=10)
    assert other.returncode == -signal.SIGTERM, "the other run's server was killed by the pattern"


@pytest.mark.timeout(90)
def test_terminate_process_groups_ends_only_its_own_children(tmp_path, bystander):
    marker, other = bystander
    assert _codes(REMEDY) == []
    t0 = time.monotonic()
    r = _run(REMEDY, tmp_path, marker)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr
    codes = r.stdout.split("CODES", 1)[1].split()
    assert codes == ["0", str(-signal.SIGKILL)]  # graceful exit; SIGKILL after the grace period
    assert (tmp_path / "graceful-cleaned").exists()  # its SIGTERM handler ran
    grandchild = int((tmp_path / "grandchild.pid").read_text())
    deadline = time.monotonic() + 10
    while not _dead(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(grandchild), "the stubborn child's own child is in its group and must be gone"
    assert other.poll() is None, "the bystander with the same name must survive"
    assert took < 45, took  # grace 2 s + kill wait: bounded
