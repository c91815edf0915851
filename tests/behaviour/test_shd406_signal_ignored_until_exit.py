"""SHD406 signal-ignored-until-exit, for real: a shutdown that ignores SIGTERM "so it is not
interrupted", saves a checkpoint, then joins a thread that never ends (a close waiting on a
dead peer).

Hazard: SIGTERM sent while it hangs does nothing (still alive 3 s later); only SIGKILL ends
it. The ``fix_source`` output (unsafe fix: the previous handler kept and restored in a
``finally`` right after the checkpoint) still protects the checkpoint, and the same SIGTERM
ends the hung join at once (the process dies of SIGTERM).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
SETTINGS = Settings(selected=("SHD406",), target_version="py311")

HAZARD = textwrap.dedent(
    '''
    import signal
    import sys
    import threading


    def pump(peer_gone):
        peer_gone.wait()  # the peer died: this never returns


    def save_checkpoint(path):
        with open(path, "w") as f:
            f.write("step 100\\n")


    def shutdown(worker, path):
        # the checkpoint must not be cut half way
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        save_checkpoint(path)
        print("WAITING", flush=True)
        worker.join()


    if __name__ == "__main__":
        worker = threading.Thread(target=pump, args=(threading.Event(),), daemon=True)
        worker.start()
        shutdown(worker, sys.argv[1])
    '''
).lstrip()


def _codes(source: str) -> list[str]:
    result = lint_source(source.encode(), "prog.py", SETTINGS)
    assert result.error is None, result.error
    return [d.code for d in result.diagnostics]


def _sigterm_while_hung(tmp_path: Path, source: str) -> tuple[bool, int, bool]:
    """Start the program, SIGTERM it once it hangs in the join (every 0.2 s for 3 s: the
    WAITING line comes from inside the protected window, so the first SIGTERM may land
    before the fixed program restores its handler). Returns (SIGTERM ended it within 3 s,
    exit status, checkpoint written)."""
    prog, ckpt = tmp_path / "prog.py", tmp_path / "ckpt.txt"
    ckpt.unlink(missing_ok=True)
    prog.write_text(source)
    proc = subprocess.Popen([sys.executable, str(prog), str(ckpt)], env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "WAITING"
        ended = False
        for _ in range(15):
            os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=0.2)
                ended = True
                break
            except subprocess.TimeoutExpired:
                pass
        if not ended:
            proc.send_signal(signal.SIGKILL)  # the only way out
            proc.wait(timeout=10)
        return ended, proc.returncode, ckpt.read_text() == "step 100\n"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.timeout(90)
def test_ignored_sigterm_leaves_only_sigkill_and_the_restore_lets_sigterm_end_it(tmp_path):
    assert _codes(HAZARD) == ["SHD406"]
    ended, status, saved = _sigterm_while_hung(tmp_path, HAZARD)
    assert not ended, "SIGTERM should be ignored while the join hangs"
    assert status == -signal.SIGKILL and saved

    fixed = fix_source(HAZARD.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    assert "_prev_sigterm = signal.signal(signal.SIGTERM, signal.SIG_IGN)" in fixed
    assert "signal.signal(signal.SIGTERM, _prev_sigterm)" in fixed
    assert _codes(fixed) == []
    ended, status, saved = _sigterm_while_hung(tmp_path, fixed)
    assert ended and status == -signal.SIGTERM
    assert saved  # the protected checkpoint still completed


# The same window with a worker that ends, and a checkpoint that may fail: the caller goes on.
NORMAL = textwrap.dedent(
    '''
    import signal
    import sys
    import threading


    def save_checkpoint(path):
        if path == "fail":
            raise OSError("disk full")
        return len(path)


    def shutdown(worker, path):
        # the checkpoint must not be cut half way
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        n = save_checkpoint(path)
        print("saved", n, flush=True)
        worker.join()
        return n


    if __name__ == "__main__":
        worker = threading.Thread(target=lambda: None)
        worker.start()
        try:
            print("returned", shutdown(worker, sys.argv[1]), flush=True)
        except OSError as exc:
            print("failed:", exc, flush=True)
        print("SIGTERM after shutdown:", signal.getsignal(signal.SIGTERM), flush=True)
    '''
).lstrip()


def _run_normal(path: Path, arg: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, str(path), arg], env=ENV, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout


@pytest.mark.timeout(60)
def test_no_signal_same_run_and_an_exception_in_the_window_is_where_it_differs(tmp_path):
    assert _codes(NORMAL) == ["SHD406"]
    (found,) = lint_source(NORMAL.encode(), "prog.py", SETTINGS).diagnostics
    assert found.fix["applicability"] == "unsafe"
    fixed = fix_source(NORMAL.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    # audit 5.2: a previous handler installed outside Python reads as None; restoring None
    # would raise TypeError in the finally and replace the exception in flight
    assert ("    finally:\n        if _prev_sigterm is not None:\n"
            "            signal.signal(signal.SIGTERM, _prev_sigterm)\n") in fixed
    original_path, fixed_path = tmp_path / "original.py", tmp_path / "fixed.py"
    original_path.write_text(NORMAL)
    fixed_path.write_text(fixed)
    # no signal, no failure: same output, value and status, but the disposition the rest of
    # the program runs with differs (1 = SIG_IGN for good, 0 = SIG_DFL restored): a SIGTERM
    # after the window now ends work that would have finished, which is why the fix is unsafe
    before, after = _run_normal(original_path, "ckpt"), _run_normal(fixed_path, "ckpt")
    assert before == (0, "saved 4\nreturned 4\nSIGTERM after shutdown: 1\n")
    assert after == (0, "saved 4\nreturned 4\nSIGTERM after shutdown: 0\n")
    # an exception that is not the hazard: the same handler runs with the same message (the
    # restore raises nothing), and again only the disposition left behind differs
    before, after = _run_normal(original_path, "fail"), _run_normal(fixed_path, "fail")
    assert before == (0, "failed: disk full\nSIGTERM after shutdown: 1\n")
    assert after == (0, "failed: disk full\nSIGTERM after shutdown: 0\n")


# The previous handler was not installed from Python (a C extension's, an embedding
# application's): `signal.signal` returns None for it. Reproduced for real: a handler set, then
# `_signal` executed again, which reads the process's dispositions back and calls the one it
# did not install None (CPython's signal_get_set_handlers).
FOREIGN = NORMAL.replace(
    "import threading\n",
    "import threading\nimport importlib\n\n"
    "signal.signal(signal.SIGTERM, lambda *a: None)\n"
    "del sys.modules['_signal']\n"
    "importlib.reload(signal)\n"
    "assert signal.getsignal(signal.SIGTERM) is None\n",
    1,
)


@pytest.mark.timeout(60)
def test_a_previous_handler_from_outside_python_does_not_replace_the_exception(tmp_path):
    """Audit 5.2: the unguarded restore raised TypeError in the finally, replacing the
    window's own exception; the guarded one lets it through as the original did."""
    fixed = fix_source(FOREIGN.encode(), "prog.py", SETTINGS, unsafe=True).source.decode()
    unguarded = fixed.replace("        if _prev_sigterm is not None:\n            signal.signal(",
                              "        signal.signal(")
    assert unguarded != fixed
    outs = {}
    for name, text in (("original", FOREIGN), ("unguarded", unguarded), ("fixed", fixed)):
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        done = subprocess.run([sys.executable, str(path), "fail"], env=ENV, capture_output=True, text=True,
                              timeout=30)
        outs[name] = (done.returncode, done.stdout.splitlines()[:1], "TypeError" in done.stderr)
    assert outs["original"] == outs["fixed"] == (0, ["failed: disk full"], False)
    assert outs["unguarded"][2] is True and outs["unguarded"][0] != 0  # the old shape's failure
