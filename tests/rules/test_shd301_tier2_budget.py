"""SHD301's tier 2 on a method no vocabulary type has by name (issue 30): only a ``TYPE.*`` type
(``requests.Session``, ``httpx.Client``, urllib3's pools) can block in it, and no value of the module
can have one unless the module spells a word of such a type (``_PREFIX_HINTS``). The condition
then answers without asking the value's qualified name, which on a long chain of rebindings
(``query = query.where(...)``, c28's sql services) ran past ``_Values._BUDGET`` and kept the file
("anything"). Here the budget is made tiny so that every question runs out; findings agree with
the tiers on and off."""

from __future__ import annotations

import pytest

import shutdown_lint.rules.shd301_blocking_call_in_coroutine as R
from tests.perf.test_candidates import _tier2_decides

_CHAIN = ("\n\nasync def search(session, a):\n    query = select(a)\n    query = query.where(a == 1)\n"
          "    query = query.order_by(a)\n    return await session.execute(query.limit(5))\n")


@pytest.mark.parametrize("imports,body,candidate,findings", [
    # no word of a TYPE.* type: ``where``/``order_by``/``limit`` cannot block, whatever ``query`` is
    ("from sqlalchemy import select", "", False, 0),
    # a word of one is spelled: the budget's "anything" keeps the file, as before
    ("from sqlalchemy import select\nfrom requests import Session", "", True, 0),
    ("from sqlalchemy import select\nimport httpx", "\ndef make() -> httpx.Client:\n    return httpx.Client()\n",
     True, 0),
    # a method some vocabulary type has (``get``): asked as before
    ("from sqlalchemy import select", "\nasync def first(a):\n    return select(a).where(a).get()\n", True, 0),
    # a TYPE.* type's method in a module that spells the type: kept and reported
    ("from sqlalchemy import select\nfrom requests import Session",
     "\nasync def send(r):\n    s = Session()\n    return s.send(r)\n", True, 1),
])
def test_shd301_tier2_non_vocabulary_method_without_a_type_word(monkeypatch, imports, body, candidate, findings):
    monkeypatch.setattr(R._Values, "_BUDGET", 2)  # every question about a value runs out: "anything"
    assert len(_tier2_decides("SHD301", imports + _CHAIN + body, candidate)) == findings
