"""SHD502's and SHD503's tier-1 conditions, sharpened in session 14 (issue 30).

Each new condition is the old one (``qualified``: the init call's or a factory's name may be
referenced) and a part derived from the rule's tier 2 (``candidate_tree``), a necessary condition
of it on any file (the argument is by each part's class in the rule's module):

- SHD502 ``C.InCode(C.Word(...))``: ``init_process_group`` is an identifier in the file's code (a
  docstring or a comment that names it gives tier 2 no call);
- SHD503 ``_FactoryMayBeCalled``: a factory's last word is written where tier 2 may read it as a
  callee (an assignment's value, a ``with`` item) or an alias's source (``import ... as``, a
  binding's value); an annotation, ``isinstance(x, W)``, a base class, ``f(W())`` give nothing.

Checked here: every shape tier 2 accepts keeps the file (``KEPT``: the new condition, tier 2 and
linting with the tiers on and off agree); the ruled-out shapes were kept by the old condition,
tier 2 drops them and the rule reports nothing there (``RULED_OUT``); a mutant of a scan that
drops one shape loses a kept case (``MUTANTS``); on the installed ray and torch (a bounded
sample): old condition and tier 2 imply the new one, and SHD503's reading holds at every place
tier 2 reads a callee's word from; the factory results give neither word from another word."""
from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.code import code_only
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

RULES = registry.rules_by_code()
MODULES = {code: sys.modules[RULES[code].__module__] for code in ("SHD502", "SHD503")}
#: the conditions before session 14
OLD = {"SHD502": C.qualified(*RULES["SHD502"].options["init_calls"].default),
       "SHD503": C.qualified(*RULES["SHD503"].options["executor_factories"].default)}


def _new(code: str, source: str | bytes) -> bool:
    return RULES[code].candidate.holds(FileText(source.encode() if isinstance(source, str) else source))


def _tier2(code: str, source: str | bytes) -> bool:
    tree = ast_tree.parse(source.encode() if isinstance(source, str) else source)
    return tree is None or not tree.exact_names or bool(RULES[code].candidate_tree(tree))


KEPT: dict[str, tuple[str, str]] = {}
RULED_OUT: dict[str, tuple[str, str]] = {}


def kept(name: str, code: str, source: str) -> None:
    KEPT[name] = (code, textwrap.dedent(source))


def ruled_out(name: str, code: str, source: str) -> None:
    RULED_OUT[name] = (code, textwrap.dedent(source))


# ---------------------------------------------------------------- SHD502
kept("init call", "SHD502", """
    import torch.distributed as dist

    def setup(rank):
        dist.init_process_group("gloo", rank=rank)
    """)
kept("from-import alias", "SHD502", """
    from torch.distributed import init_process_group as join

    def setup(rank):
        join("gloo", rank=rank)
    """)
# the call in a replacement field, on a line of a triple-quoted formatted string that starts with
# ``#``: ``words.Word`` takes it for a comment (the docstring keeps the old condition)
kept("call in a formatted string after #", "SHD502", '''
    """Calls init_process_group."""
    import torch.distributed as dist

    def setup():
        banner = f"""
    #{dist.init_process_group("gloo")}"""
        return banner
    ''')
ruled_out("docstring only", "SHD502", '''
    """Run after torch.distributed.init_process_group("nccl")."""
    import torch

    def rank():
        return torch.distributed.get_rank()
    ''')
ruled_out("comment and string", "SHD502", """
    import torch.distributed as dist

    # dist.init_process_group() is called by the launcher
    MESSAGE = "call init_process_group first"

    def rank():
        return dist.get_rank()
    """)

# ---------------------------------------------------------------- SHD503
_CLS = "class W:\n    def __init__(self):\n        "
kept("stored call", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n" + _CLS
     + "self.pool = ThreadPoolExecutor(4)\n")
kept("dotted call", "SHD503", "import concurrent.futures as cf\n" + _CLS + "self.pool = cf.ThreadPoolExecutor(4)\n")
kept("module-level pool", "SHD503", "import multiprocessing\n\nPOOL = multiprocessing.Pool(4)\n")
kept("annotated module-level pool", "SHD503", "from multiprocessing import Pool\n\nPOOL: 'Pool' = Pool(2)\n")
kept("dotted, over lines with a comment before", "SHD503", "import concurrent.futures\n" + _CLS
     + "self.pool = (  # the workers\n            concurrent.futures.ThreadPoolExecutor(4))\n")
kept("CRLF, over lines with a comment before", "SHD503", ("import concurrent.futures\n" + _CLS
     + "self.pool = (  # the workers\n            concurrent.futures.ThreadPoolExecutor(4))\n").replace("\n", "\r\n"))
kept("continuation", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n" + _CLS
     + "self.pool = \\\n            ThreadPoolExecutor(4)\n")
kept("parenthesised call", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n" + _CLS
     + "self.pool = (ThreadPoolExecutor(4))\n")
kept("callee in parentheses", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n" + _CLS
     + "self.pool = (ThreadPoolExecutor)(4)\n")
kept("import-as alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor as TPE\n" + _CLS
     + "self.pool = TPE()\n")
kept("import-as over lines with a comment", "SHD503", "from concurrent.futures import (\n"
     "    ThreadPoolExecutor  # the pool\n    as TPE,\n)\n" + _CLS + "self.pool = TPE()\n")
kept("value alias", "SHD503", "import concurrent.futures as cf\n\nMAKE = cf.ThreadPoolExecutor\n" + _CLS
     + "self.pool = MAKE(2)\n")
kept("parenthesised value alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n\n"
     "MAKE = (\n    ThreadPoolExecutor\n)\n" + _CLS + "self.pool = MAKE(2)\n")
kept("attribute alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n" + _CLS
     + "self.make = ThreadPoolExecutor\n        self.pool = self.make(2)\n")
kept("walrus alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n\n"
     "if (make := ThreadPoolExecutor):\n    POOL = make(2)\n")
kept("await alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n\n\nclass W:\n"
     "    async def start(self):\n        make = await ThreadPoolExecutor\n        self.pool = make(2)\n")
kept("with alias", "SHD503", "from concurrent.futures import ThreadPoolExecutor\n\n"
     "with ThreadPoolExecutor as make:\n    POOL = make(2)\n")
kept("with item, work queued", "SHD503", """
    from concurrent.futures import ThreadPoolExecutor

    def run(jobs):
        with ThreadPoolExecutor() as ex:
            for job in jobs:
                ex.submit(job)
    """)
kept("second with item", "SHD503", """
    from concurrent.futures import ThreadPoolExecutor

    def run(path, jobs):
        with open(path) as log, ThreadPoolExecutor() as ex:
            for job in jobs:
                ex.submit(job, log)
    """)
kept("parenthesised with items", "SHD503", """
    import concurrent.futures

    def run(jobs):
        with (
            concurrent.futures.ProcessPoolExecutor() as ex,
        ):
            for job in jobs:
                ex.submit(job)
    """)
kept("with item in an async with", "SHD503", """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    async def run(jobs):
        async with asyncio.timeout(5):
            with ThreadPoolExecutor(max_workers=2) as ex:
                results = ex.map(str, jobs)
    """)
ruled_out("annotations and an import", "SHD503", """
    from concurrent.futures import ThreadPoolExecutor
    from typing import Optional

    def run(pool: Optional[ThreadPoolExecutor] = None) -> ThreadPoolExecutor:
        return pool
    """)
ruled_out("base class, isinstance, docstring", "SHD503", '''
    """Wraps a concurrent.futures.ThreadPoolExecutor."""
    import concurrent.futures


    class Tracked(concurrent.futures.ThreadPoolExecutor):
        pass


    def check(x):
        return isinstance(x, concurrent.futures.ThreadPoolExecutor)
    ''')
ruled_out("handed on and returned", "SHD503", """
    from concurrent.futures import ThreadPoolExecutor

    def make():
        return ThreadPoolExecutor(2)

    def serve(start):
        start(ThreadPoolExecutor(4))
    """)
ruled_out("a tuple of bases", "SHD503", """
    from multiprocessing.pool import Pool

    class Picklable:
        pass

    Picklable.__bases__ = (Pool,)
    """)
ruled_out("the factory in a conditional with item", "SHD503", """
    from concurrent.futures import ProcessPoolExecutor
    from contextlib import nullcontext

    def run(jobs):
        with nullcontext() if len(jobs) < 2 else ProcessPoolExecutor() as ex:
            for job in jobs:
                ex.submit(job)
    """)


@pytest.mark.parametrize("name", list(KEPT))
def test_shapes_tier_2_accepts_stay_candidates(name: str) -> None:
    code, source = KEPT[name]
    assert _tier2(code, source), "not a shape tier 2 keeps"
    assert _new(code, source)
    assert len(_tiers_agree(code, source)) == 1  # a finding a condition too sharp would lose


@pytest.mark.parametrize("name", list(RULED_OUT))
def test_shapes_ruled_out_now(name: str) -> None:
    code, source = RULED_OUT[name]
    data = source.encode()
    assert OLD[code].holds(FileText(data)), "the old condition did not keep it"
    assert not _new(code, source)
    assert not _tier2(code, source)
    assert _tiers_agree(code, source) == []  # nothing lost: no finding with the tiers off


def test_the_old_condition_is_kept() -> None:
    """The new conditions are the old ones and a part: never more permissive."""
    for code in ("SHD502", "SHD503"):
        cond = RULES[code].candidate
        assert isinstance(cond, C.All) and repr(cond.parts[0]) == repr(OLD[code])


# ---------------------------------------------------------------- mutants: each shape is needed
#: (function of the rule's module, text in it, replacement, a kept case the mutant loses)
MUTANTS = [
    ("_calls_or_binds", 'if src.startswith(b"as", k)', "if False", "import-as alias"),
    ("_calls_or_binds", 'if src.startswith(b"as", k)', "if False", "with alias"),
    ("_calls_or_binds", "if src[k] == 61:", "if False:", "stored call"),
    ("_calls_or_binds", "if src[k] == 61:", "if False:", "value alias"),
    ("_calls_or_binds", "if src[k] == 61:", "if False:", "walrus alias"),
    ("_calls_or_binds", "if src[k] == 61:", "if False:", "attribute alias"),
    ("_calls_or_binds", "return called or opens <= closes", "return opens <= closes", "parenthesised call"),
    ("_calls_or_binds", "return called or opens <= closes", "return called or opens == 0",
     "parenthesised value alias"),
    ("_calls_or_binds", "(src[k] == 44 or", "(False or", "second with item"),
    ("_calls_or_binds", '== b"with"))', '== b"????"))', "with item, work queued"),
    ("_calls_or_binds", '== b"with"))', '== b"????"))', "parenthesised with items"),
    ("_calls_or_binds", '== b"await"', '== b"?????"', "await alias"),
    ("_calls_or_binds", "while k >= 0 and src[k] == 46:", "while False:", "dotted call"),
    ("_calls_or_binds", "if k == _UNREAD:\n        return True", "if k == _UNREAD:\n        return False",
     "dotted, over lines with a comment before"),
    ("_calls_or_binds", "while k < end and src[k] == 41:", "while False:", "callee in parentheses"),
    ("_skip_on", "if c == 35:", "if False:", "import-as over lines with a comment"),
    ("_skip_back", "return _UNREAD", "pass", "dotted, over lines with a comment before"),
    ("_skip_back", "return _UNREAD", "pass", "CRLF, over lines with a comment before"),
]


def _mutant(module, name: str, old: str, new: str):
    source = textwrap.dedent(inspect.getsource(getattr(module, name)))
    assert source.count(old) == 1, (name, old)
    namespace = dict(vars(module))
    exec(compile(source.replace(old, new), module.__file__, "exec"), namespace)  # noqa: S102
    return namespace[name]


@pytest.mark.parametrize("name,old,new,case", MUTANTS, ids=[f"{m[0]}-{m[3]}" for m in MUTANTS])
def test_a_mutant_that_drops_a_shape_loses_a_case(name, old, new, case, monkeypatch) -> None:
    code, source = KEPT[case]
    module = MODULES[code]
    monkeypatch.setattr(module, name, _mutant(module, name, old, new))
    assert _tier2(code, source)
    assert not _new(code, source), "the mutant still keeps it: the case does not need the shape"


def test_a_gap_without_continuations_loses_a_case(monkeypatch) -> None:
    code, source = KEPT["continuation"]
    monkeypatch.setattr(MODULES[code], "_GAP", frozenset(b" \t\f\r\n"))
    assert not _new(code, source)


def test_a_words_level_comment_test_without_the_field_check_loses_the_formatted_string_call(monkeypatch) -> None:
    """SHD502's ``C.InCode(C.Word(...))`` keeps a call in a triple-quoted f-string's field on a
    line that starts with ``#``; ``words._in_comment`` without its ``{`` test (as it was before
    session 14: it read that line as a comment) loses it."""
    from shutdown_lint.prefilter import words

    code, source = KEPT["call in a formatted string after #"]
    assert _new(code, source)

    def without_field_check(src: bytes, i: int) -> bool:
        start = src.rfind(b"\n", 0, i) + 1
        return src.find(b"#", start, i) >= 0 and src.find(b'"', start, i) < 0 and src.find(b"'", start, i) < 0

    monkeypatch.setattr(words, "_in_comment", without_field_check)
    assert not _new(code, source)


# ---------------------------------------------------------------- real code: the installed ray, torch
def _installed(package: str, *folders: str) -> list[Path]:
    spec = importlib.util.find_spec(package)  # no import: only where it is
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py"))


#: ~800 modules that name the init call or the factories most (torch.distributed, ray.util, ...)
SAMPLE = [("torch", "distributed", "multiprocessing", "_inductor/compile_worker"),
          ("ray", "util", "data/util", "dashboard/modules", "train/torch", "_private")]


def test_old_condition_and_tier_2_imply_the_new_one_on_installed_code() -> None:
    checked = 0
    for package, *folders in SAMPLE:
        for path in _installed(package, *folders):
            data = path.read_bytes()
            for code in ("SHD502", "SHD503"):
                if OLD[code].holds(FileText(data)) and _tier2(code, data):
                    assert _new(code, data), (code, str(path))
                    checked += 1
    assert checked >= 10  # the sample holds files that tier 2 keeps


def _heads(tree: ast.Module):
    """The places ``Tree.words`` reads a word from: the head (``ast_tree.head``) of an assignment's
    call value, a ``with`` item's call, a one-target binding's value (a name, an attribute), a
    ``:=``'s value, an ``as`` binding's ``with`` item; and an ``import ... as`` name's last word."""
    Call, Bound = ast.Call, (ast.Name, ast.Attribute)
    for n in ast.walk(tree):
        t = type(n)
        if t is ast.Assign and (type(n.value) is Call or (len(n.targets) == 1 and isinstance(n.targets[0], Bound))):
            yield n.value
        elif t is ast.AnnAssign and n.value is not None and (type(n.value) is Call or isinstance(n.target, Bound)):
            yield n.value
        elif t is ast.NamedExpr:
            yield n.value
        elif t is ast.withitem and (type(n.context_expr) is Call or isinstance(n.optional_vars, Bound)):
            yield n.context_expr
        elif t in (ast.Import, ast.ImportFrom):
            yield from (a for a in n.names if a.asname)


def test_shd503_reading_holds_where_tier_2_reads_a_word_on_installed_code() -> None:
    """``_calls_or_binds`` holds at the word of every place tier 2 reads a callee's or an alias's
    word from, whatever the word (over the whole corpora: 1.2 million places, none missed)."""
    module = MODULES["SHD503"]
    places = 0
    for package, *folders in SAMPLE:
        for path in _installed(package, *folders)[::4]:
            data = path.read_bytes()
            if not data.isascii() or code_only(data) is None:
                continue
            tree = ast.parse(data)
            starts = [0]
            for line in data.splitlines(keepends=True):
                starts.append(starts[-1] + len(line))
            for node in _heads(tree):
                if type(node) is ast.alias:
                    a = starts[node.lineno - 1] + node.col_offset
                    span = data[a:starts[node.end_lineno - 1] + node.end_col_offset]
                    word = node.name.rsplit(".", 1)[-1].encode()
                    p = a + span.rfind(word, 0, span.rfind(node.asname.encode()))
                else:
                    head = ast_tree._unwrap(node)[0]
                    if type(head) is ast.Name:
                        word, p = head.id.encode(), starts[head.lineno - 1] + head.col_offset
                    elif type(head) is ast.Attribute:
                        word = head.attr.encode()
                        p = starts[head.end_lineno - 1] + head.end_col_offset - len(word)
                    else:
                        continue
                assert data[p:p + len(word)] == word
                assert module._calls_or_binds(data, p, p + len(word)), (str(path), data[p - 40:p + 40])
                places += 1
    assert places > 1000


def test_factory_results_give_no_word_of_these_rules() -> None:
    """The factory results (``Tree.words``' one step per call) give a factory's word only for a
    factory's word, and never ``init_process_group``: the two scans need not read them."""
    factories = MODULES["SHD503"]._FactoryMayBeCalled(RULES["SHD503"].options["executor_factories"].default).words
    for callee, results in ast_tree._factory_results().items():
        found = {w.encode() for w in results} & factories
        assert not found or callee.encode() in factories, (callee, found)
        assert "init_process_group" not in results
