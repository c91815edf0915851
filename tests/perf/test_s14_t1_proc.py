"""Session 14 (issue 30): tier-1 conditions made stricter so that fewer files are parsed for tier 2.
A tier-1 condition must be a necessary condition of the rule's tier 2 (``candidate_tree``) on every
file: each shape tier 2 accepts is written here (aliases, continuations, comments, parentheses,
starred arguments) and must keep the new condition; its lookalikes in strings and comments, and
the shapes tier 2 rejects for sure, are ruled out. A mutant of the condition that drops one shape
fails a case (``test_*_mutant_loses_a_case``), and the whole check runs over the installed ray and
torch files that hold the rule's words (``test_*_sound_on_installed_sources``).

SHD202 (``rules/shd202_interrupt_exit_zero.py``, ``_tier1``): ``KeyboardInterrupt``, or a
``SIGINT``/``SIGTERM`` token followed by a ``,`` (a call's first positional argument with a second
one: path 2 of ``_may_exit_zero_on_interrupt``)."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree, select
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

SHD202 = registry.rules_by_code()["SHD202"]
M202 = __import__(SHD202.__module__, fromlist=["_tier1"])


def _old_202() -> C.Cond:
    """SHD202's condition before session 14 (every word on the whole text)."""
    return C.AnyOf(C.Word("KeyboardInterrupt"), C.All(C.Word("SIGINT", "SIGTERM"), SHD202._EXITS))


def _tree(rule, source: bytes) -> bool:
    """Tier 2 keeps ``rule`` on ``source`` (a file ``ast`` cannot parse, or whose names Python
    normalises, keeps every rule)."""
    tree = ast_tree.parse(source)
    return tree is None or not tree.exact_names or bool(rule.candidate_tree(tree))


_HANDLER = textwrap.indent("""
def handler(signum, frame):
    cleanup()
    sys.exit(0)
""", " " * 8)

# (name, source, tier 2 keeps it, the new tier 1 keeps it, SHD202's findings with the tiers off)
CASES_202 = [
    ("except KeyboardInterrupt", """
        import sys
        def main():
            try:
                run()
            except KeyboardInterrupt:
                sys.exit(0)
        """, True, True, 1),
    ("an alias imported", """
        import sys
        from builtins import KeyboardInterrupt as Stop
        def main():
            try:
                run()
            except Stop:
                sys.exit(0)
        """, True, True, 1),
    ("a name bound to it", """
        import sys
        STOPS = KeyboardInterrupt
        def main():
            try:
                run()
            except STOPS:
                sys.exit(0)
        """, True, True, 1),
    ("over a continuation, a comment in the tuple", """
        import sys
        def main():
            try:
                run()
            except (ValueError,  # bad input
                    \\
                    KeyboardInterrupt):
                sys.exit(0)
        """, True, True, 1),
    ("KeyboardInterrupt only in a docstring: kept, tier 2 rules it out", '''
        """Stops on KeyboardInterrupt."""
        import sys
        def main():
            try:
                run()
            except ValueError:
                sys.exit(0)
        ''', False, True, 0),
    ("KeyboardInterrupt only in a comment", '''
        import sys
        def main():
            try:
                run()
            except ValueError:  # KeyboardInterrupt
                sys.exit(0)
        ''', False, False, 0),
    ("signal.signal(signal.SIGINT, handler)", """
        import signal, sys
        """ + _HANDLER + """
        signal.signal(signal.SIGINT, handler)
        """, True, True, 1),
    ("from signal import SIGTERM, a bare name", """
        import sys
        from signal import SIGTERM, signal
        """ + _HANDLER + """
        signal(SIGTERM, handler)
        """, True, True, 0),
    ("a continuation and a comment before the comma", """
        import signal, sys
        """ + _HANDLER + """
        signal.signal(signal.SIGINT \\
                      # the interrupt
                      , handler)
        """, True, True, 1),
    ("the signal in parentheses", """
        import signal, sys
        """ + _HANDLER + """
        signal.signal(( signal.SIGTERM ) , handler)
        """, True, True, 0),
    ("a starred first argument", """
        import signal, sys
        """ + _HANDLER + """
        signal.signal(*signal.SIGINT, handler)
        """, True, True, 1),
    ("a ** first argument", """
        import signal, sys
        """ + _HANDLER + """
        signal.signal(**signal.SIGINT, **handler)
        """, True, True, 1),
    ("add_signal_handler on an aliased module", """
        import asyncio, sys
        import signal as sg
        """ + _HANDLER + """
        asyncio.get_event_loop().add_signal_handler(sg.SIGTERM, handler)
        """, True, True, 0),
    ("the signal last in a call", """
        import os, signal, sys
        def stop(pid):
            os.kill(pid, signal.SIGTERM)
            sys.exit(0)
        """, False, False, 0),
    ("the signal compared, defaulted", """
        import signal, sys
        def stop(sig=signal.SIGTERM):
            if sig == signal.SIGINT:
                sys.exit(0)
        """, False, False, 0),
    ("the install only in a string: kept, tier 2 rules it out", '''
        import sys
        """signal.signal(signal.SIGINT, handler)"""
        ''' + _HANDLER + '''
        ''', False, True, 0),
    ("the signals only in sentences and comments", '''
        import sys
        """Stops on SIGINT or SIGTERM."""
        ''' + _HANDLER + '''
        HOW = "send SIGTERM (then SIGKILL)"
        # signal.signal(signal.SIGINT, handler)
        ''', False, False, 0),
    ("a default followed by a comma: kept, tier 2 rules it out", """
        import signal, sys
        def stop(sig=signal.SIGTERM, grace=3):
            sys.exit(0)
        """, False, True, 0),
]


@pytest.mark.parametrize("name,source,tree,new,findings", CASES_202, ids=[c[0] for c in CASES_202])
def test_shd202_tier1_cases(name, source, tree, new, findings):
    data = textwrap.dedent(source).encode()
    assert _tree(SHD202, data) is tree, name
    assert select.declaration(SHD202).holds(FileText(data)) is new, name
    if tree:
        assert _old_202().holds(FileText(data)), name  # the old condition kept it too
    assert _tiers_agree("SHD202", data) == ["SHD202"] * findings


_MUTANTS_202 = {
    "no parentheses": (M202._SIGNALS, C.gap() + ","),
    "no gap": (M202._SIGNALS, r"(?:\))*,"),
    "SIGINT only": (("SIGINT",), M202._SIGNAL_TAIL),
    "SIGTERM only": (("SIGTERM",), M202._SIGNAL_TAIL),
}


@pytest.mark.parametrize("mutant", list(_MUTANTS_202) + ["no KeyboardInterrupt branch"])
def test_shd202_mutant_loses_a_case(mutant):
    """Each mutant rules out a case that tier 2 keeps."""
    if mutant == "no KeyboardInterrupt branch":
        cond = M202._tier1(M202._SIGNALS, M202._SIGNAL_TAIL, SHD202._EXITS).parts[1]
    else:
        signals, tail = _MUTANTS_202[mutant]
        cond = M202._tier1(signals, tail, SHD202._EXITS)
    lost = [name for name, source, tree, _, _ in CASES_202
            if tree and not cond.holds(FileText(textwrap.dedent(source).encode()))]
    assert lost, mutant


def _installed(*packages: str) -> list[Path]:
    out: list[Path] = []
    for name in packages:
        spec = importlib.util.find_spec(name)  # no import: the package's location only
        assert spec is not None and spec.submodule_search_locations, name
        for root in spec.submodule_search_locations:
            out += sorted(Path(root).rglob("*.py"))
    return out


def _sound_on(rule, old: C.Cond, needles: tuple[bytes, ...]) -> tuple[int, int, list[str]]:
    """Over the installed ray and torch files holding one of ``needles`` (without which the old
    condition cannot hold): (files the old condition keeps, files the new one rules out,
    files that tier 2 keeps and the new condition rules out)."""
    kept = ruled_out = 0
    lost = []
    for path in _installed("ray", "torch"):
        data = path.read_bytes()
        if not any(n in data for n in needles) or not old.holds(FileText(data)):
            continue
        kept += 1
        if select.declaration(rule).holds(FileText(data)):
            continue
        ruled_out += 1
        if _tree(rule, data):
            lost.append(str(path))
    return kept, ruled_out, lost


def test_shd202_sound_on_installed_sources():
    kept, ruled_out, lost = _sound_on(SHD202, _old_202(), (b"KeyboardInterrupt", b"SIGINT", b"SIGTERM"))
    assert not lost
    assert kept > 20 and ruled_out > 3, (kept, ruled_out)


# ---------------------------------------------------------------------------------------- SHD201
# ``rules/shd201_sys_exit_in_task.py``: beside the words, ``_ReadAsName("exit", "quit",
# "SystemExit")`` in code: a word right before a ``.``, or next to a non-keyword word on its line
# (prose in a docstring or in a formatted string's text, which the code view keeps), is no name
# tier 2 reads.
SHD201 = registry.rules_by_code()["SHD201"]
M201 = __import__(SHD201.__module__, fromlist=["_ReadAsName"])


def _old_201() -> C.Cond:
    return C.InCode(C.All(C.AnyOf(C.qualified("sys.exit"), C.builtin("exit", "quit", "SystemExit")),
                          C.AnyOf(C.context("coroutine"), C.context("executor"), C.context("thread"))))


CASES_201 = [
    ("sys.exit in a coroutine", """
        import sys
        async def work():
            sys.exit(1)
        """, True, True, 1),
    ("an imported alias", """
        from sys import exit as leave
        async def work():
            leave(1)
        """, True, True, 1),
    ("a name bound to it", """
        import sys
        stop = sys.exit
        async def work():
            stop(2)
        """, True, True, 1),
    ("raise SystemExit from an error", """
        async def work():
            try:
                await step()
            except OSError as e:
                raise SystemExit from e
        """, True, True, 1),
    ("over a continuation, a space before the call", """
        import sys
        async def work():
            sys.\\
                exit (3)
        """, True, True, 1),
    ("keywords around it", """
        async def work(done):
            await step()
            return exit(3) if done else quit()
        """, True, True, 2),
    ("a thread target", """
        import sys, threading
        def job():
            sys.exit(0)
        threading.Thread(target=job).start()
        """, True, True, 1),
    ("a formatted string's prose only", """
        import sys, logging
        async def work(actor):
            logging.warning(f"Failed to exit actor {actor}")
            logging.warning(f"node {actor} exit.")
        """, False, False, 0),
    ("an attribute of the builtin", """
        import sys
        async def work():
            return exit.__doc__
        """, False, False, 0),
    ("prose, then a real call", """
        import sys
        async def work(actor):
            print(f"about to exit {actor}")
            sys.exit(4)
        """, True, True, 1),
]


@pytest.mark.parametrize("name,source,tree,new,findings", CASES_201, ids=[c[0] for c in CASES_201])
def test_shd201_tier1_cases(name, source, tree, new, findings):
    data = textwrap.dedent(source).encode()
    assert _tree(SHD201, data) is tree, name
    assert select.declaration(SHD201).holds(FileText(data)) is new, name
    if tree:
        assert _old_201().holds(FileText(data)), name
    assert _tiers_agree("SHD201", data) == ["SHD201"] * findings


@pytest.mark.parametrize("mutant", ["no keywords", "a dot before counts", "no SystemExit"])
def test_shd201_mutant_loses_a_case(mutant, monkeypatch):
    names = ("exit", "quit", "SystemExit")
    if mutant == "no keywords":
        monkeypatch.setattr(M201, "_KEYWORDS", frozenset())
    elif mutant == "a dot before counts":
        real = M201._not_a_name
        monkeypatch.setattr(M201, "_not_a_name", lambda src, p, q: real(src, p, q) or src[p - 1:p] == b".")
    else:
        names = ("exit", "quit")
    cond = C.All(_old_201(), C.InCode(M201._ReadAsName(*names)))
    lost = [name for name, source, tree, _, _ in CASES_201
            if tree and not cond.holds(FileText(textwrap.dedent(source).encode()))]
    assert lost, mutant


@pytest.mark.parametrize("source,read", [
    (b"exit(1)", True), (b"x = exit", True), (b"raise SystemExit", True), (b"import exit as e", True),
    (b"a = exit if b else quit", True), (b"f(exit, quit)", True), (b"x = exit  # to exit now", True),
    (b"return await exit()", True), (b"match exit:", True), (b"type T = exit", True),
    (b"\xef\xbb\xbfexit(1)", True),  # a BOM right before: no space, no reading back
    (b"exit.__doc__", False), (b"exit . x", False), (b"x = 'to exit now'", False),
    (b"f'node exit.'", False), (b"f'exit code {rc}'", False), (b"f'Failed to exit actor'", False),
    (b"f'caf\xc3\xa9 exit'", False),  # a non-ASCII word before: prose
])
def test_shd201_read_as_name(source, read):
    cond = C.InCode(M201._ReadAsName("exit", "quit", "SystemExit"))
    assert cond.holds(FileText(source)) is read


def test_shd201_sound_on_installed_sources():
    kept, ruled_out, lost = _sound_on(SHD201, _old_201(), (b"exit", b"quit", b"SystemExit"))
    assert not lost
    assert kept > 10 and ruled_out > 3, (kept, ruled_out)
