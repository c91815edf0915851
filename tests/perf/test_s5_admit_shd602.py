"""SHD602 tier-2 near misses for issue 30's fifth session: a ``multiprocessing`` child started by
``p.start()`` (the first statement after the assignment that names ``p``) and stopped with only
harmless code in between is ruled out (``_check`` measures from the start to the first stop).
The cases are a table of ``NearMisses`` (tests/perf/test_candidates.py)."""

from __future__ import annotations

import textwrap

from tests.perf.test_candidates import NearMisses

CASES = NearMisses()


def case(candidate: bool, findings: int, body: str) -> None:
    CASES.case("SHD602", candidate, findings, "import multiprocessing as mp\n\n\ndef work(x):\n    pass\n\n\n"
               "def run(q):\n" + textwrap.indent(textwrap.dedent(body), "    "))


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


# a receiver typed by an annotation, not by ``get_context`` (the typing fact: a parameter's, a
# variable's or a function's return annotation naming ``multiprocessing``): reported, so kept.
# Ruled out before (tier 2 read ``<x>.Process`` as a context's only where ``get_context`` is called)
for module, annotation in (("multiprocessing", 'ctx: "multiprocessing"'), ("multiprocessing as mp", "ctx: mp")):
    CASES.case("SHD602", True, 1, f"import {module}\n\n\ndef work(x):\n    pass\n\n\n"
               f"def run(q, {annotation}):\n    p = ctx.Process(target=work, args=(q,))\n    p.start()\n"
               "    compute(q)\n    p.join()\n")


test_tier2_near_miss = CASES.test()
