"""``shutdown_lint.unvalidated_parse``: the analyzer's libcst parse skips per-node validation for
the nodes its own thread builds during the parse, and for nothing else: not for the same thread
before or after, not for another thread while the parse runs, not in the fixer."""

from __future__ import annotations

import threading
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint import analyzer, fixer, registry, unvalidated_parse
from shutdown_lint.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
BIG = "".join(p.read_text() for p in sorted((ROOT / "shutdown_lint").glob("*.py")))


def _invalid_node_raises() -> bool:
    """Build a node that libcst's validation refuses (whitespace that is not whitespace)."""
    try:
        cst.SimpleWhitespace("not whitespace")
    except cst.CSTValidationError:
        return True
    return False


def _settled() -> bool:
    return (unvalidated_parse._parses == 0 and not unvalidated_parse._parsing.get()
            and cst.CSTNode.__post_init__ is unvalidated_parse._original_post_init)


class _BlockingBytes(bytes):
    """Source bytes whose decoding (inside ``libcst.parse_module``, after ``parse_module`` has
    registered the thread) waits until the test lets it go: a thread held inside a parse."""

    def __new__(cls, data: bytes, inside: threading.Event, release: threading.Event, during=None):
        self = super().__new__(cls, data)
        self.inside, self.release, self.during = inside, release, during
        return self

    def decode(self, *args, **kwargs):  # type: ignore[override]
        if self.during is not None:
            self.during()
        self.inside.set()
        assert self.release.wait(30), "the test never released the parse"
        return bytes(self).decode(*args, **kwargs)


class _ParseThread(threading.Thread):
    """A real thread that parses ``source`` with the analyzer's parse and stays inside it
    until ``release`` is set."""

    def __init__(self, source: bytes, during=None) -> None:
        super().__init__(daemon=True)
        self.inside, self.release = threading.Event(), threading.Event()
        self.source = _BlockingBytes(source, self.inside, self.release, during)
        self.module: cst.Module | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.module = analyzer._parse_module(self.source, "held.py")
        except BaseException as e:  # reported by the test
            self.error = e

    def __enter__(self) -> "_ParseThread":
        self.start()
        assert self.inside.wait(30), "the parsing thread never got inside the parse"
        assert unvalidated_parse._parses == 1
        return self

    def __exit__(self, *exc) -> None:
        self.release.set()
        self.join(30)
        assert not self.is_alive()


def test_same_thread_validates_after_a_parse():
    module = analyzer._parse_module(BIG.encode(), "big.py")
    assert module.code == BIG
    assert _settled()
    assert _invalid_node_raises()


def test_parse_equals_the_validated_parse():
    sources = [BIG] + [p.read_text() for p in sorted((ROOT / "examples").rglob("*.py"))]
    for code in sources:
        fast = analyzer._parse_module(code.encode(), "x.py")
        slow = cst.parse_module(code.encode())  # no parse of ours runs: validated
        assert fast.deep_equals(slow)
        assert fast.code == slow.code == code


def test_parse_skips_validation_of_its_own_nodes(monkeypatch):
    """The point of the module: the parser's own nodes are not validated (0 calls of libcst's
    ``__post_init__`` during our parse, one per node during libcst's)."""
    calls = [0]
    original = unvalidated_parse._original_post_init

    def counting(self):
        calls[0] += 1
        original(self)

    monkeypatch.setattr(unvalidated_parse, "_original_post_init", counting)
    analyzer._parse_module(BIG.encode(), "big.py")
    assert calls[0] == 0
    monkeypatch.setattr(cst.CSTNode, "__post_init__", counting)
    cst.parse_module(BIG)
    assert calls[0] > 10000


def test_a_syntax_error_leaves_validation_on():
    with pytest.raises(analyzer.AnalysisError):
        analyzer._parse_module(b"def (:\n", "bad.py")
    with pytest.raises(analyzer.AnalysisError):
        analyzer._parse_module(b"x = 1\n\x00\n", "nul.py")
    assert _settled()
    assert _invalid_node_raises()


def test_another_thread_validates_while_a_parse_runs():
    with _ParseThread(BIG.encode()) as held:
        assert cst.CSTNode.__post_init__ is unvalidated_parse._validate_unless_parsing
        assert not unvalidated_parse._parsing.get()
        assert _invalid_node_raises()  # this thread, while the other is inside its parse
        assert held.is_alive() and unvalidated_parse._parses == 1  # still inside: the two overlapped
    assert held.error is None and held.module is not None
    assert held.module.deep_equals(cst.parse_module(BIG))
    assert _settled()
    assert _invalid_node_raises()


def test_a_parse_inside_a_parse():
    """Nested use: a parse inside a parse (here: from the held thread's decode) leaves the
    outer parse's thread registered, and everything settled once both are over."""
    inner: list[cst.Module] = []

    def nested() -> None:
        assert unvalidated_parse._parsing.get()
        inner.append(analyzer._parse_module(b"y = 2\n", "inner.py"))
        assert unvalidated_parse._parsing.get(), "the inner parse's end ended the outer's"
        assert unvalidated_parse._parses == 1

    with _ParseThread(BIG.encode(), during=nested) as held:
        assert unvalidated_parse._parses == 1
    assert held.error is None, held.error
    assert inner[0].code == "y = 2\n"
    assert held.module is not None and held.module.deep_equals(cst.parse_module(BIG))
    assert _settled()
    assert _invalid_node_raises()


SETTINGS = Settings(selected=tuple(sorted(registry.rules_by_code())))


def _fixable_example() -> str:
    """The first rule example whose safe fix the fixer applies."""
    for rule in registry.all_rules():
        for ex in rule.invalid:
            if ex.fixed is not None and fixer.fix_source(ex.code.encode(), "example.py", SETTINGS).applied:
                return ex.code
    raise AssertionError("no rule example with a fix the fixer applies")


def _fix_checking_validation(monkeypatch) -> tuple[bytes, list[bool]]:
    """Run the real fixer on a rule example; each time it applies fixes (after its parse, in
    the same thread), record whether an invalid node is refused there."""
    seen: list[bool] = []
    real = fixer.apply_fixes

    def apply_fixes(*args, **kwargs):
        seen.append(_invalid_node_raises())
        return real(*args, **kwargs)

    code = _fixable_example()
    monkeypatch.setattr(fixer, "apply_fixes", apply_fixes)
    outcome = fixer.fix_source(code.encode(), "example.py", SETTINGS)
    assert outcome.applied >= 1
    return outcome.source, seen


def test_the_fixer_validates(monkeypatch):
    source, seen = _fix_checking_validation(monkeypatch)
    assert seen and all(seen)
    assert _settled()


def test_the_fixer_validates_while_another_thread_parses(monkeypatch):
    """The language server fixes in one executor thread while it lints in another."""
    alone, _ = _fix_checking_validation(monkeypatch)
    with _ParseThread(BIG.encode()) as held:
        source, seen = _fix_checking_validation(monkeypatch)
        assert held.is_alive() and unvalidated_parse._parses == 1
    assert seen and all(seen)
    assert source == alone
    assert held.error is None
    assert _settled()
