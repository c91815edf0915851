"""SHD503's second shape (an executor's ``with`` block or ``shutdown()`` waiting for work queued
in bulk) and the candidate tiers: tier 2 (``_may_drain``) keeps every file the rule can report
in, and linting with the tiers on and off finds the same on each near miss."""

from __future__ import annotations

import pytest

from tests.perf.test_candidates import _tier2_decides

_BLOCK = ("from concurrent.futures import ThreadPoolExecutor\n\ndef run(items):\n"
          "    with ThreadPoolExecutor(4) as ex:\n        futures = [ex.submit(f, i) for i in items]\n"
          "        return [x.result() for x in futures]\n")


@pytest.mark.parametrize("source,candidate,reported", [
    (_BLOCK, True, True),
    # the factory through an alias, the submit in a for loop
    ("import concurrent.futures as cf\n\ndef run(items):\n    with cf.ProcessPoolExecutor() as pool:\n"
     "        for i in items:\n            pool.submit(f, i)\n", True, True),
    # a map iterator dropped unstarted
    ("from concurrent.futures import ThreadPoolExecutor as T\n\ndef run(items):\n    with T(2) as ex:\n"
     "        ex.map(f, items)\n", True, True),
    # a local executor shut down with wait=True after a kept map
    ("from concurrent.futures import ThreadPoolExecutor\n\ndef run(items):\n    ex = ThreadPoolExecutor(2)\n"
     "    it = ex.map(f, items)\n    ex.shutdown()\n    return list(it)\n", True, True),
    # near misses the tier keeps, the rule does not report
    (_BLOCK.replace("ex.submit(f, i) for i in items", "ex.submit(f, i) for i in range(4)"), True, False),
    (_BLOCK.replace("        return", "        try:\n            return").replace(
        "for x in futures]\n", "for x in futures]\n        except KeyboardInterrupt:\n"
        "            ex.shutdown(wait=False, cancel_futures=True)\n            raise\n"), True, False),
    # a map whose iterator the block consumes queues nothing in bulk (the rule's _queues_in_bulk):
    # ruled out since efa7d8e
    ("from concurrent.futures import ThreadPoolExecutor\n\ndef run(items):\n    with ThreadPoolExecutor() as ex:\n"
     "        return list(ex.map(f, items))\n", False, False),
    # a pool whose with block terminates: no drain, and nothing else for the rule either
    ("from multiprocessing import Pool\n\ndef run(items):\n    with Pool(2) as p:\n"
     "        return [p.apply_async(f, (i,)) for i in items]\n", False, False),
    # no submit or map spelled: the tier drops the file
    ("from concurrent.futures import ThreadPoolExecutor\n\ndef run(items):\n    with ThreadPoolExecutor() as ex:\n"
     "        pass\n", False, False),
])
def test_tier2_keeps_every_drain_finding(source, candidate, reported):
    found = _tier2_decides("SHD503", source, candidate)
    assert (found == ["SHD503"]) is reported, found
