"""SHD602 tier-2 near misses for issue 30's fifth session: a ``multiprocessing`` child started by
``p.start()`` (the first statement after the assignment that names ``p``) and stopped with only
harmless code in between is ruled out (``_check`` measures from the start to the first stop).
Each case states whether the rule's ``candidate_tree`` keeps the file and how many findings the
rule reports with the tiers off; with the tiers on linting must find the same."""

from __future__ import annotations

import textwrap

import pytest

from tests.perf.test_candidates import _tier2_decides

CASES: list[tuple[str, bool, int]] = []  # (source, candidate, findings with the tiers off)


def case(candidate: bool, findings: int, body: str) -> None:
    source = "import multiprocessing as mp\n\n\ndef work(x):\n    pass\n\n\ndef run(q):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")
    CASES.append((source, candidate, findings))


case(False, 0, """
    p = mp.Process(target=work, args=(q,))
    p.start()
    p.join()
""")
case(False, 0, """
    a = mp.Process(target=work, args=(q,))
    b = mp.Process(target=work, args=(q,))
    a.start()
    b.start()
    print("started")
    a.join()
    b.join()
""")
case(True, 1, """
    p = mp.Process(target=work, args=(q,))
    p.start()
    compute(q)
    p.join()
""")
case(True, 1, """
    p = mp.Process(target=work, args=(q,))
    compute(q)
    p.start()
    compute(q)
    p.join()
""")
case(False, 0, """
    p = mp.Process(target=work, args=(q,))
    compute(q)
    p.start()
    p.join()
""")
case(True, 1, """
    p = mp.Process(target=work, args=(q,))
    p.join()
    p.start()
    p.join()
""")
case(True, 1, """
    p = mp.Process(target=work, args=(q,))
    if q:
        p.start()
    compute(q)
    p.join()
""")
case(True, 0, """
    p = mp.Process(target=work, args=(q,))
    p.start(); compute(q)
    p.join()
""")  # (``_code_between`` starts after the start's line: not reported; kept all the same)
case(False, 0, """
    p = mp.Process(target=work, args=(q,))
    share(p)
    p.start()
    p.join()
""")
case(True, 1, """
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=work, args=(q,))
    p.start()
    compute(q)
    p.join()
""")
case(False, 0, """
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=work, args=(q,))
    p.start()
    p.join()
""")


@pytest.mark.parametrize("source,candidate,findings", CASES, ids=[f"SHD602-{i}" for i in range(len(CASES))])
def test_tier2_near_miss(source, candidate, findings):
    without_tiers = _tier2_decides("SHD602", source, candidate)  # tiers on find what tiers off do
    assert len(without_tiers) == findings, without_tiers
