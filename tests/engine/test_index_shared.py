"""The project index's log shared by a run's pool workers (``shutdown_lint/index/shared.py``):
what one forked worker summarised, another reads instead of summarising it again, and only
while the file's stat is the one summarised. Real forked processes, real files."""

from __future__ import annotations

import multiprocessing
import os
import sys

import pytest

from shutdown_lint.index.project import ProjectIndex
from shutdown_lint.index.shared import SharedLog
from shutdown_lint.index.summary import digest, summarize

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method")

CTX = multiprocessing.get_context("fork")


def _in_child(fn, *args):
    """Run ``fn(*args)`` in a forked process; its return value (picklable) comes back."""
    parent, child = CTX.Pipe(duplex=False)

    def target():
        child.send(fn(*args))
        child.close()

    p = CTX.Process(target=target)
    p.start()
    got = parent.recv() if parent.poll(30) else "no answer"
    p.join(30)
    assert p.exitcode == 0
    return got


def test_a_record_put_by_one_process_is_read_by_another():
    log = SharedLog(CTX.Lock(), size=1 << 20)
    _in_child(lambda: log.put("s/a.py", {"x": [1, 2]}) or True)
    assert _in_child(lambda: log.get("s/a.py")) == {"x": [1, 2]}
    assert log.get("s/a.py") == {"x": [1, 2]}  # the parent reads it too
    assert log.get("s/b.py") is None
    # a key with characters a file name may hold (undecodable bytes as surrogates)
    odd = "s/\udcff\u00e9.py"
    _in_child(lambda: log.put(odd, 7) or True)
    assert log.get(odd) == 7


def test_a_full_log_takes_no_more_records_and_keeps_what_it_has():
    log = SharedLog(CTX.Lock(), size=4096)
    log.put("a", b"x" * 100)
    log.put("b", b"y" * 5000)  # does not fit
    assert log.full
    assert log.get("a") == b"x" * 100 and log.get("b") is None


def test_a_lock_held_by_a_dead_process_makes_the_others_work_alone(monkeypatch):
    import shutdown_lint.index.shared as shared

    monkeypatch.setattr(shared, "LOCK_WAIT", 0.2)
    lock = CTX.Lock()
    log = SharedLog(lock, size=1 << 20)
    log.put("a", 1)

    def die_holding_it():
        lock.acquire()
        os._exit(0)

    p = CTX.Process(target=die_holding_it)
    p.start()
    p.join(30)
    assert _in_child(lambda: (log.put("b", 2), log.get("a"), log.stuck)) == (None, None, True)


@pytest.fixture
def project(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "env.py").write_text("import asyncio\n\nclass Env:\n    async def close(self):\n        await asyncio.sleep(0)\n")
    return tmp_path


def test_a_summary_computed_by_one_worker_is_not_computed_again_by_another(project):
    path = str(project / "pkg" / "env.py")
    index = ProjectIndex([str(project / "pkg")])
    index.shared = SharedLog(CTX.Lock(), size=1 << 20)

    def load():
        deps: dict = {}
        s = index.summary(path, deps)
        return s, deps, sorted(index.new_entries)

    first, deps1, computed1 = _in_child(load)
    second, deps2, computed2 = _in_child(load)
    assert computed1 == [path] and computed2 == []  # the second worker read the first one's
    data = open(path, "rb").read()
    assert first == second == summarize(data, path)
    st = os.stat(path)
    assert deps1 == deps2 == {path: [st.st_mtime_ns, st.st_size, digest(first)]}


def test_a_file_changed_since_it_was_summarised_is_summarised_again(project):
    path = project / "pkg" / "env.py"
    index = ProjectIndex([str(project / "pkg")])
    index.shared = SharedLog(CTX.Lock(), size=1 << 20)
    _in_child(lambda: index.summary(str(path)) and True)
    path.write_text(path.read_text() + "\n\ndef more():\n    pass\n")

    def load():
        return index.summary(str(path)), sorted(index.new_entries)

    again, computed = _in_child(load)
    assert computed == [str(path)]
    assert "more" in again["functions"]


def test_a_claimed_value_is_computed_by_the_claimer_only_and_waited_for_by_the_others():
    log = SharedLog(CTX.Lock(), size=1 << 20)
    assert _in_child(lambda: log.claim("w")) is True  # the first to claim computes it
    assert _in_child(lambda: log.claim("w")) is False  # the others wait for it
    assert log.claim("w") is False
    assert _in_child(lambda: log.wait("w", timeout=0.05)) is None  # not there yet: None at the deadline
    _in_child(lambda: log.put("w", {"word": ["a.py"]}) or True)
    assert _in_child(lambda: log.wait("w", timeout=30)) == {"word": ["a.py"]}
    assert log.claim("other") is True  # claims are per key


def test_a_log_that_cannot_be_used_lets_every_process_compute_for_itself(monkeypatch):
    import shutdown_lint.index.shared as shared

    full = SharedLog(CTX.Lock(), size=16)
    assert full.claim("w") is True and full.claim("w") is True  # no room for a claim: nobody waits
    monkeypatch.setattr(shared, "LOCK_WAIT", 0.2)
    lock = CTX.Lock()
    log = SharedLog(lock, size=1 << 20)
    lock.acquire()  # held by someone else: stuck
    try:
        assert log.claim("w") is True and log.stuck
        assert log.wait("w", timeout=30) is None
    finally:
        lock.release()


def test_the_import_word_table_is_built_by_one_worker_of_the_run(project):
    index = ProjectIndex([str(project / "pkg")])
    index.shared = SharedLog(CTX.Lock(), size=1 << 20)
    built = []
    original = index.project_files

    def build():
        index.project_files = lambda: built.append(1) or original()
        table = index._files_importing_word()
        return {k: v for k, v in table.items()}, len(built)

    first, walked1 = _in_child(build)
    second, walked2 = _in_child(build)
    assert walked1 == 1 and walked2 == 0  # the second read the first one's table
    assert first == second and b"asyncio" in first
