"""``SharedLog.parts`` (``shutdown_lint/index/shared.py``): a value computed in parts by the
pool workers that ask for it, each part once in the run; a worker that asks while another
computes takes the parts nobody has claimed instead of waiting for the whole. Real forked
processes sharing one log."""

from __future__ import annotations

import multiprocessing
import os
import sys
import time

import pytest

from shutdown_lint.index.shared import SharedLog

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork start method")

CTX = multiprocessing.get_context("fork")


def _value(i: int) -> dict:
    return {"part": i, "words": [f"w{i}", f"w{i + 1}"]}


def _parts_in(log: SharedLog, n: int, pause: float, entered=None, wait_for=None):
    """``log.parts`` in this process: (the parts, the indexes this process computed). With
    events: ``entered`` is set when this process starts its first part, which then waits for
    ``wait_for`` (the other process inside a part of its own)."""
    mine = []

    def compute(i: int) -> dict:
        mine.append(i)
        if entered is not None and len(mine) == 1:
            entered.set()
            if wait_for is not None:
                assert wait_for.wait(30)
        time.sleep(pause)
        return _value(i)

    return log.parts("t", n, compute), mine


def _run_two(n: int, pause: float):
    """Two forked processes ask for the same parts, the second while the first computes part 0."""
    log = SharedLog(CTX.Lock(), size=1 << 20)
    first_in, second_in = CTX.Event(), CTX.Event()
    out = CTX.Queue()

    def first():  # claims part 0 and stays in it until the second process computes a part
        out.put(("first", _parts_in(log, n, pause, first_in, second_in)))

    def second():  # asks once the first is computing
        assert first_in.wait(30)
        out.put(("second", _parts_in(log, n, pause, second_in)))

    procs = [CTX.Process(target=first), CTX.Process(target=second)]
    for p in procs:
        p.start()
    got = dict(out.get(timeout=60) for _ in procs)
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    return got


def test_two_processes_compute_the_parts_together_each_part_once():
    got = _run_two(12, 0.02)
    want = [_value(i) for i in range(12)]
    (values1, mine1), (values2, mine2) = got["first"], got["second"]
    assert values1 == want and values2 == want  # both have every part, in order
    assert sorted(mine1 + mine2) == list(range(12))  # each part computed once in the run
    assert mine1[0] == 0 and mine2[0] == 1  # the second took the next free part instead of waiting


def test_a_process_alone_computes_every_part_and_the_next_reads_them():
    log = SharedLog(CTX.Lock(), size=1 << 20)
    parent, child = CTX.Pipe(duplex=False)

    def alone():
        child.send(_parts_in(log, 5, 0.0))

    p = CTX.Process(target=alone)
    p.start()
    values, mine = parent.recv()
    p.join(30)
    assert values == [_value(i) for i in range(5)] and mine == list(range(5))
    again, mine_here = _parts_in(log, 5, 0.0)  # a later asker: all from the log
    assert again == values and mine_here == []


def test_a_part_claimed_by_a_process_that_died_is_computed_by_the_one_that_waits(monkeypatch):
    import shutdown_lint.index.shared as shared

    monkeypatch.setattr(shared, "CLAIM_WAIT", 0.2)
    log = SharedLog(CTX.Lock(), size=1 << 20)

    def claim_and_die():
        log.put("t:0", _value(0))
        log.claim("t:1")  # claimed, never computed
        os._exit(0)

    p = CTX.Process(target=claim_and_die)
    p.start()
    p.join(30)
    values, mine = _parts_in(log, 3, 0.0)
    assert values == [_value(i) for i in range(3)]
    assert mine == [2, 1]  # the free part first, then the dead claimer's after the wait


def test_a_log_that_cannot_be_used_computes_every_part_here():
    full = SharedLog(CTX.Lock(), size=16)  # no room for a claim
    values, mine = _parts_in(full, 4, 0.0)
    assert values == [_value(i) for i in range(4)] and mine == [0, 1, 2, 3]
