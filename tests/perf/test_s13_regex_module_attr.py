"""``words.ModuleAttr`` answers its five regexes' questions without compiling them (session 13,
issue 30: the rules' 40 conditions' 200 patterns cost ~0.2 s to compile, serial before a -j2
run's workers fork). The decisions must be the regexes', at every occurrence of the root: a
frozen copy of the previous implementation (10b1ae3: ``gap()``, the five patterns, ``_scan``'s
loop body) is compared with the new one on texts built from each condition's own words plus
gaps, comments, continuations and noise (hypothesis, and a seeded sweep)."""

from __future__ import annotations

import gc
import itertools
import random
import re
import subprocess
import sys
import textwrap
from typing import Optional, Sequence

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from shutdown_lint import registry
from shutdown_lint.prefilter import words as W
from shutdown_lint.prefilter.words import FileText, _from_import_names, _spellings

# --------------------------------------------------------------------------- the frozen copy

_OLD_GAP = rb"(?:\s|\\(?:\r\n|\r|\n)|#[^\r\n]*)"
_old_gaps = itertools.count()
_OLD_IDENT = bytes(b == 95 or 48 <= b <= 57 or 65 <= b <= 90 or 97 <= b <= 122 for b in range(256))


def _old_gap() -> str:
    i = next(_old_gaps)
    return (rf"(?:(?![\s\\#])|(?=(?P<gw{i}>\s*))(?P=gw{i})"
            rf"(?:(?:\\(?:\r\n|\r|\n)|#[^\r\n]*(?=[\r\n]|\Z|[^\s#]))(?=(?P<gv{i}>\s*))(?P=gv{i}))*)")


class _OldModuleAttr:
    """``ModuleAttr``'s patterns and the body of its ``_scan`` loop at 10b1ae3 (without the
    quick test, which skips only occurrences where every pattern fails)."""

    def __init__(self, name: str, spellings: Sequence[str] = ()) -> None:
        parts = name.split(".")
        self.root = parts[0].encode()

        def spelled(dotted: Sequence[str]) -> bytes:
            return b"".join((_old_gap().encode() + rb"\." + _old_gap().encode() if i else b"") + re.escape(w.encode())
                            for i, w in enumerate(dotted))

        full = [spelled(sp.split(".")) for sp in (name, *spellings)]
        prefixes: set[str] = set()
        self.binders: dict[bytes, set[bytes]] = {}
        for sp in (name, *spellings):
            sp_parts = sp.split(".")
            for i in range(1, len(sp_parts)):
                prefixes.add(".".join(sp_parts[:i]))
                self.binders.setdefault(".".join(sp_parts[:i]).encode(), set()).add(sp_parts[i].encode())
        ordered = sorted(prefixes)
        inner = [p for p in ordered if "." in p]
        self.literal = re.compile(rb"(?:" + b"|".join(full) + rb")(?![A-Za-z0-9_])")
        self.aliased = re.compile(rb"(?:" + b"|".join(spelled(p.split(".")) for p in ordered) + rb")(?=[\s\\#])"
                                  + _old_gap().encode() + rb"(?:import|as)\b")
        self.not_attr = re.compile(re.escape(self.root) + rb"\s*[^.\s]|" + re.escape(self.root) + rb"\s*$")
        self.prefix_value = (re.compile(rb"(?:" + b"|".join(spelled(p.split(".")) for p in inner)
                                        + rb")(?![A-Za-z0-9_])(?!" + _old_gap().encode() + rb"\.)") if inner else None)
        self.plain_import = re.compile(rb"[ \t]*import[ \t]+(?:" + b"|".join(spelled(p.split(".")) for p in ordered)
                                       + rb")[ \t]*(?:#.*)?\r?")

    def decide(self, text: FileText, p: int) -> bool:
        src = text.source
        if self.literal.match(src, p):
            return True
        m = self.aliased.match(src, p)
        if m is not None:
            return self._binds(src, m)
        if p != 0 and src[p - 1] == 46:
            return False
        if self.not_attr.match(src, p) or (self.prefix_value is not None and self.prefix_value.match(src, p)):
            return not self.plain_import.fullmatch(text.line_at(p))
        return False

    def _binds(self, src: bytes, m: "re.Match[bytes]") -> bool:
        matched = m.group()
        if matched.endswith(b"as"):
            return True
        wanted = self.binders.get(re.sub(_OLD_GAP + b"+", b"", matched[: -len(b"import")]))
        if wanted is None:
            return True
        names = _from_import_names(src, m.end())
        return names is None or b"*" in names or not wanted.isdisjoint(names)


# --------------------------------------------------------------------------- the comparison


def _catalogue() -> list[str]:
    """The names of every ``ModuleAttr`` the rules build (the driver context's too)."""
    registry.all_rules()
    W._context_words()
    return sorted({o.name for o in gc.get_objects() if isinstance(o, W.ModuleAttr)})


NAMES = _catalogue()
_PAIRS: dict[str, tuple[W.ModuleAttr, _OldModuleAttr]] = {}


def _pair(name: str) -> tuple[W.ModuleAttr, _OldModuleAttr]:
    if name not in _PAIRS:
        _PAIRS[name] = (W.ModuleAttr(name, _spellings(name)), _OldModuleAttr(name, _spellings(name)))
    return _PAIRS[name]


def _vocabulary(name: str) -> list[bytes]:
    return sorted({w.encode() for sp in (name, *_spellings(name)) for w in sp.split(".")})


def _compare(name: str, src: bytes) -> int:
    """Old and new decide alike at every occurrence of the root, and on the whole text; the
    number of occurrences."""
    new, old = _pair(name)
    text = FileText(src)
    occurrences = text.positions(new.root)
    for p in occurrences:
        one = FileText(src)
        one._positions[new.root] = [p]  # the scan of this occurrence alone
        assert new._scan(one) == old.decide(text, p), (name, p, src)
    assert new._scan(FileText(src)) == any(old.decide(text, p) for p in occurrences), (name, src)
    return len(occurrences)


def test_the_catalogue_has_its_conditions():
    assert len(NAMES) >= 30 and "ray.remote" in NAMES and "torch.distributed.init_process_group" in NAMES


_NOISE = [b" ", b"  ", b"\t", b"\n", b"\r", b"\r\n", b"\\\n", b"\\\r\n", b"\\", b"#", b"# c", b"#.", b"# import",
          b" as ", b"\f", b"\v", b"(", b")", b",", b"=", b"*", b"x", b"\xc3\xa9", b";", b"'", b"import", b"from",
          b"as", b".", b"..", b"_", b"1", b"# x.", b"importx", b"asx", b"import (", b" import *"]


@st.composite
def _texts(draw):
    name = draw(st.sampled_from(NAMES))
    words = _vocabulary(name) + [name.split(".")[0].encode()] * 3  # the root more often
    pieces = draw(st.lists(st.one_of(st.sampled_from(words), st.sampled_from(_NOISE)), min_size=1, max_size=20))
    return name, b"".join(pieces)


# quirks of the patterns the new reading must keep: a comment given back ends before a "." or a
# word (``asyncio # .events import``: the first alternative, asyncio, matches first), an
# ``import``/``as`` inside a comment after the name, a line after a comment line
@example(("asyncio.subprocess.create_subprocess_exec", b"from asyncio # .events import subprocess\n"))
@example(("asyncio.create_subprocess_exec", b"from asyncio.# events import tasks\nrunners import x\n"))
@example(("ray.remote", b"import ray  # as good as any\n"))
@example(("ray.remote", b"import ray  # noqa\nimport remote\n"))
@example(("torch.distributed.init_process_group", b"import torch.# x\ndistributed\n"))
@example(("concurrent.futures.ThreadPoolExecutor",
          b"concurrent# # ThreadPoolExecutor#as# import * concurrent\r# import #asthread"))
@example(("torch.distributed.init_process_group",
          b"import torch##.#..distributed_c10d# # import \n# import .\\\ntorchtorch\\\n#.\rinit_process_group"))
@example(("multiprocessing.get_context", b"from multiprocessing\t# import  import * multiprocessing# get_context"))
@example(("asyncio.create_subprocess_shell", b"asyncio# import . runners# import .import create_subprocess_shelltasks"))
@example(("torch.multiprocessing.get_context", b"x = torch\r# import \n.#get_contextimport xmultiprocessing # import "))
@given(_texts())
@settings(max_examples=400, deadline=None)
def test_the_decisions_are_the_patterns(case):
    _compare(*case)


def _structured(rnd: random.Random, name: str) -> bytes:
    """A dotted name (root, then dots and words with gaps between), then a gap, ``import``/``as``
    or not, and words: the shapes every pattern reads."""
    vocab = _vocabulary(name)

    def gap() -> bytes:
        return b"".join(rnd.choice([b" ", b"\n", b"\\\n", b"#", b"# ", b"#.", b"# " + rnd.choice(vocab), b"# import ",
                                    b"#as", b".", rnd.choice(vocab), b"\r", b"\t"]) for _ in range(rnd.randint(0, 4)))

    out = [rnd.choice([b"", b"import ", b"from ", b"x = "]), name.split(".")[0].encode()]
    for _ in range(rnd.randint(0, 4)):
        out += [gap(), b".", gap(), rnd.choice(vocab)]
    out += [gap(), rnd.choice([b"import", b"as", b"", b".", b"(", b"import x", b"import (", b" import *"]),
            rnd.choice([b" ", b""]), rnd.choice(vocab), gap(), rnd.choice(vocab)]
    return b"".join(out)


def test_a_seeded_sweep_decides_alike():
    rnd = random.Random(13)
    seen = 0
    for _ in range(6000):
        name = rnd.choice(NAMES)
        seen += _compare(name, _structured(rnd, name))
    assert seen > 5000


@pytest.mark.parametrize("src, holds", [
    (b"import ray\nray.remote(f)\n", True),
    (b"import ray  # noqa\nremote = 1\n", False),
    (b"import ray  # noqa: as\nremote = 1\n", True),  # ``as`` in the comment ends the aliased pattern
    (b"from ray import remote\n", True),
    (b"from ray import get  # remote\n", False),
    (b"r = ray\nr.remote\n", True),
    (b"x.ray.remote\n", True),  # the name spelled out, whatever comes before
    (b"y = x.ray\nremote\n", False),  # another object's ray
    (b"ray . \\\n  remote\n", True),
    (b"ray.\n# c\nremote\n", True),
])
def test_ray_remote(src, holds):
    assert W.ModuleAttr("ray.remote").holds(FileText(src)) is holds
    new, old = _pair("ray.remote")
    assert any(old.decide(FileText(src), p) for p in FileText(src).positions(b"ray")) is holds


def test_no_condition_holds_a_compiled_pattern():
    for name in NAMES:
        new, _ = _pair(name)
        assert new.holds(FileText(b"import " + new.root + b"\n" + new.last.names[0] + b"()\n")) in (True, False)
        assert not [k for k, v in vars(new).items() if isinstance(v, re.Pattern)], name


def test_comment_lines_ending_in_a_backslash_do_not_hang():
    # the previous patterns read each ``# a\`` line two ways (the comment to its end, or up to the
    # backslash and then the continuation): 2**k readings, 2.5 s at k=20; the new reading is linear
    code = textwrap.dedent("""
        from shutdown_lint.prefilter.words import FileText, ModuleAttr
        src = b"import ray\\n" + b"# a\\\\\\n" * 200 + b"x = 1\\nremote\\n"
        print(ModuleAttr("ray.remote").holds(FileText(src)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


def _old_answer(name: str, src: bytes) -> Optional[bool]:
    _, old = _pair(name)
    text = FileText(src)
    return any(old.decide(text, p) for p in text.positions(old.root))


def test_the_backslash_lines_answer_as_a_few_did():
    for k in (1, 3, 6):
        src = b"import ray\n" + b"# a\\\n" * k + b"x = 1\nremote\n"
        assert W.ModuleAttr("ray.remote")._scan(FileText(src)) is _old_answer("ray.remote", src) is False
        src = b"import ray\n" + b"# a\\\n" * k + b".remote\n"
        assert W.ModuleAttr("ray.remote")._scan(FileText(src)) is _old_answer("ray.remote", src) is True


def test_comment_blocks_that_repeat_the_words_are_read_once(monkeypatch):
    # ``import asyncio`` then k comment lines ``# tasks.``: each "." and each ``tasks`` is a place
    # the patterns' gaps may end; the regex (and ``_first`` without ``failed``) tried the rest
    # of the spelling from each ``tasks`` once per earlier ".": k**2 gap readings (k**3 work; 400
    # lines took the patterns 49 s). Counted, not timed: the readings grow linearly with k.
    calls = [0]
    ends = W._ends

    def counted(*args):
        calls[0] += 1
        return ends(*args)

    monkeypatch.setattr(W, "_ends", counted)
    name = "asyncio.subprocess.create_subprocess_exec"
    cond = W.ModuleAttr(name, _spellings(name))
    counts = []
    for k in (20, 40, 80):
        calls[0] = 0
        src = b"import asyncio\n" + b"# tasks.\n" * k + b"x = 1\ncreate_subprocess_exec\n"
        assert cond._scan(FileText(src)) is False
        counts.append(calls[0])
    assert counts[2] < 2.5 * counts[1] < 2.5 ** 2 * counts[0], counts
