"""piped_child.PipedChild, the suite's reader for "start a child, read its ready line, signal it,
collect the rest": nothing the child printed is lost, and nothing is left running."""
from __future__ import annotations

import gc
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import pytest

from piped_child import PipedChild

# one write of two lines, flushed before the parent reads anything: the pipe then holds both, so
# the parent's first read(2) of the pipe returns both, whatever the timing
BOTH = 'import sys; sys.stdout.write("ready\\nnext\\n"); sys.stdout.flush()\n'

SIGNALLED = textwrap.dedent('''
    import signal, sys, time
    def on_term(signum, frame):
        print("term", flush=True)
        print("bye", file=sys.stderr, flush=True)
        sys.exit(3)
    signal.signal(signal.SIGTERM, on_term)
    sys.stdout.write("ready\\nwaiting\\n")
    sys.stdout.flush()
    while True:
        time.sleep(0.05)
''')


def _prog(tmp_path, source: str) -> list:
    path = tmp_path / "prog.py"
    path.write_text(source)
    return [sys.executable, path]


@pytest.mark.timeout(60)
def test_the_line_written_with_the_ready_line_is_kept(tmp_path):
    # the pattern this replaces: readline() then communicate() loses "next", which the buffered
    # readline read past "ready" (the control: it shows the two lines came in one read)
    with subprocess.Popen([str(a) for a in _prog(tmp_path, BOTH)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stdout.readline() == "ready\n"
        assert proc.communicate(timeout=30) == ("", "")
    with PipedChild(_prog(tmp_path, BOTH)) as child:
        child.expect("ready")
        assert child.finish(30) == (0, "next\n", "")


@pytest.mark.timeout(60)
def test_signalled_after_the_ready_line_keeps_the_rest_and_stderr(tmp_path):
    with PipedChild(_prog(tmp_path, SIGNALLED)) as child:
        assert child.readline() == "ready\n"
        assert child.readline() == "waiting\n"
        child.send_signal(signal.SIGTERM)
        assert child.finish(30) == (3, "term\n", "bye\n")


@pytest.mark.timeout(60)
def test_stderr_written_before_the_ready_line_is_read_meanwhile(tmp_path):
    # 1 MiB of stderr before the ready line: a reader that waited on stdout alone would leave the
    # child blocked on a full stderr pipe (64 KiB) and never see the line
    source = 'import sys; sys.stderr.write("e" * (1 << 20)); sys.stderr.flush(); print("ready", flush=True)\n'
    with PipedChild(_prog(tmp_path, source)) as child:
        child.expect("ready", timeout=30)
        status, out, err = child.finish(30)
    assert (status, out, err) == (0, "", "e" * (1 << 20))


@pytest.mark.timeout(60)
def test_a_child_that_never_prints_is_killed_and_reaped_with_its_pipes_closed(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(subprocess.TimeoutExpired):
            with PipedChild(_prog(tmp_path, "import time; time.sleep(60)\n")) as child:
                child.readline(timeout=0.5)
        assert child.proc.returncode == -signal.SIGKILL
        assert child.proc.stdout.closed and child.proc.stderr.closed
        del child
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], caught


@pytest.mark.timeout(60)
def test_a_wrong_ready_line_fails_with_stderr_and_leaves_nothing_running(tmp_path):
    source = 'import sys, time; print("oops", file=sys.stderr, flush=True); print("other", flush=True); time.sleep(60)\n'
    child = PipedChild(_prog(tmp_path, source))
    with pytest.raises(AssertionError) as failed:
        with child:
            child.expect("ready")
    assert failed.value.args[0][:2] == ("other", "ready") and "oops" in failed.value.args[0][2]
    assert child.proc.returncode == -signal.SIGKILL


@pytest.mark.timeout(60)
def test_finish_or_kill_and_the_process_group(tmp_path):
    # a child in its own session that started a grandchild: killed as a group, both are gone
    source = textwrap.dedent('''
        import subprocess, sys, time
        g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        print(g.pid, flush=True)
        time.sleep(60)
    ''')
    with PipedChild(_prog(tmp_path, source), start_new_session=True) as child:
        grandchild = int(child.readline())
        assert child.finish_or_kill(0.5) == (True, -signal.SIGKILL, "", "")
    for _ in range(200):  # the grandchild, reparented, is gone (or a zombie) shortly after SIGKILL
        try:
            with open(f"/proc/{grandchild}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    break
        except FileNotFoundError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"grandchild {grandchild} still running")
