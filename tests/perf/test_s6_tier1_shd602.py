"""SHD602's tier-1 condition reads the factory names in the file's code (issue 30, session 6).

``_kind`` reports only a call whose name the facts resolve (code: imports, attribute chains) or
``<x>.Process(...)`` on a receiver typed as a ``multiprocessing`` context; the one name the facts
read from a string is a type annotation (``ctx: "multiprocessing"``). So the condition is the
factory names in code (``C.InCode``), or ``Process`` in code with ``multiprocessing`` anywhere
in the text. A factory named only in a docstring, comment or string no longer sends the file to
``ast``. Each reported spelling below must stay admitted; the annotation case fails when the
second alternative is dropped (``test_annotation_needs_its_alternative``).

Tier 1 is compared alone (tier 2 off); tier 2 keeps the annotation case too since it reads any
``<x>.Process(...)`` as a context's (tests/perf/test_s5_admit_shd602.py)."""
from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.words import FileText
from shutdown_lint.prefilter import select
from shutdown_lint.settings import Settings
from shutdown_lint.analyzer import lint_source

RULE = registry.rules_by_code()["SHD602"]


def _tier1_agrees(data: bytes) -> list:
    """SHD602's findings in ``data`` with both tiers off, asserted equal to those with tier 1 on
    and tier 2 off (what this module's condition decides, alone)."""
    settings = Settings(selected=("SHD602",))
    with select.disabled():
        without = [(d.code, d.line) for d in lint_source(data, "t.py", settings).diagnostics]
    with select.disabled(tree_only=True):
        assert [(d.code, d.line) for d in lint_source(data, "t.py", settings).diagnostics] == without
    return without

_STOPPED_LATE = """
def run(cmd):
    p = {make}
    step()
    p.wait()
"""

_MP_LATE = """
def work():
    pass


def run({params}):
    {setup}p = {make}
    p.start()
    step()
    p.join()
"""

#: every spelling of a factory the rule reports (one finding each)
REPORTED = [
    "import subprocess\n" + _STOPPED_LATE.format(make="subprocess.Popen(cmd)"),
    "import subprocess as sp\n" + _STOPPED_LATE.format(make="sp.Popen(cmd)"),
    "from subprocess import Popen as P\n" + _STOPPED_LATE.format(make="P(cmd)"),
    "from subprocess import (\n    PIPE,  # pipes\n    Popen,\n)\n" + _STOPPED_LATE.format(make="Popen(cmd)"),
    "import asyncio\n" + _STOPPED_LATE.format(make="await asyncio.create_subprocess_exec(*cmd)")
    .replace("def run", "async def run").replace("p.wait()", "await p.wait()"),
    "import multiprocessing\n" + _MP_LATE.format(params="", setup="", make="multiprocessing.Process(target=work)"),
    "from multiprocessing import Process\n" + _MP_LATE.format(params="", setup="", make="Process(target=work)"),
    "import torch.multiprocessing as tmp\n" + _MP_LATE.format(params="", setup="", make="tmp.Process(target=work)"),
    "import multiprocessing as mp\n" + _MP_LATE.format(params="", setup='ctx = mp.get_context("spawn")\n    ',
                                                       make="ctx.Process(target=work)"),
    # the receiver typed by a string annotation: ``multiprocessing`` is read from the string
    "import multiprocessing\n" + _MP_LATE.format(params='ctx: "multiprocessing"', setup="",
                                                 make="ctx.Process(target=work)"),
]

#: factories named only where the facts never read them: ruled out at tier 1 now
RULED_OUT = [
    '"""Starts its workers with subprocess.Popen."""\nimport subprocess\n\n\ndef run(cmd):\n'
    '    return subprocess.run(cmd)\n',
    "import subprocess\n\n\ndef run(cmd):\n    if not cmd:\n        raise ValueError('subprocess.Popen needs a command')\n"
    "    return subprocess.run(cmd)\n",
    'import os\n\nHELP = "use multiprocessing.get_context()"\n\n\ndef run():\n    os.fork()\n',
]


@pytest.mark.parametrize("source", REPORTED, ids=range(len(REPORTED)))
def test_reported_spellings_stay_admitted(source: str) -> None:
    data = textwrap.dedent(source).encode()
    assert RULE.candidate.holds(FileText(data))
    assert RULE.candidate.holds_on_text(FileText(data))
    assert len(_tier1_agrees(data)) == 1


@pytest.mark.parametrize("source", RULED_OUT, ids=range(len(RULED_OUT)))
def test_names_in_strings_and_comments_are_ruled_out(source: str) -> None:
    data = source.encode()
    old = C.qualified(*RULE_MODULE.FACTORIES, *RULE_MODULE.CONTEXT_FACTORIES)
    assert old.holds(FileText(data))  # admitted before: the words are in the text
    assert not RULE.candidate.holds(FileText(data))
    assert _tier1_agrees(data) == []


def test_annotation_needs_its_alternative() -> None:
    """Without ``Process`` in code and ``multiprocessing`` in the text as an alternative, the
    string-annotation case loses its finding (the unsound variant rules it out)."""
    data = REPORTED[-1].encode()
    unsound = C.InCode(C.qualified(*RULE_MODULE.FACTORIES, *RULE_MODULE.CONTEXT_FACTORIES))
    assert not unsound.holds(FileText(data))
    assert RULE.candidate.holds(FileText(data))


import importlib  # noqa: E402

RULE_MODULE = importlib.import_module(RULE.__module__)
