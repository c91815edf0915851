"""SHD502's tier-1 condition, sharpened in session 14 (issue 30).

The new condition is the old one (``qualified``: the init call's name may be referenced) and a
part derived from the rule's tier 2 (``candidate_tree``), a necessary condition of it on any file
(the argument is in ``_LastWordInCode``'s docstring): ``init_process_group`` is an identifier in
the file's code (a docstring or a comment that names it gives tier 2 no call).

Checked here: every shape tier 2 accepts keeps the file (``KEPT``: the new condition, tier 2 and
linting with the tiers on and off agree); the ruled-out shapes were kept by the old condition,
tier 2 drops them and the rule reports nothing there (``RULED_OUT``); the word condition of
``words`` in its place loses a case; on the installed ray and torch (a bounded sample): old
condition and tier 2 imply the new one; the factory results never give the word."""
from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import registry
from shutdown_lint.prefilter import ast_tree
from shutdown_lint.prefilter import words as C
from shutdown_lint.prefilter.words import FileText
from tests.perf.test_candidates import _tiers_agree

RULES = registry.rules_by_code()
#: the conditions before session 14
OLD = {"SHD502": C.qualified(*RULES["SHD502"].options["init_calls"].default)}


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
    for code in ("SHD502",):
        cond = RULES[code].candidate
        assert isinstance(cond, C.All) and repr(cond.parts[0]) == repr(OLD[code])


# ---------------------------------------------------------------- a mutant: the word condition of ``words``
def test_the_word_condition_of_words_misses_a_call_in_a_formatted_string(monkeypatch) -> None:
    """``C.InCode(C.Word(...))`` in place of ``_LastWordInCode`` loses the formatted string's call."""
    code, source = KEPT["call in a formatted string after #"]
    monkeypatch.setattr(RULES[code], "candidate", C.All(OLD[code], C.InCode(C.Word("init_process_group"))))
    assert not _new(code, source)


# ---------------------------------------------------------------- real code: the installed ray, torch
def _installed(package: str, *folders: str) -> list[Path]:
    spec = importlib.util.find_spec(package)  # no import: only where it is
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    root = Path(list(spec.submodule_search_locations)[0])
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py"))


#: ~800 modules that name the init call most (torch.distributed, ray.util, ...)
SAMPLE = [("torch", "distributed", "multiprocessing", "_inductor/compile_worker"),
          ("ray", "util", "data/util", "dashboard/modules", "train/torch", "_private")]


def test_old_condition_and_tier_2_imply_the_new_one_on_installed_code() -> None:
    checked = 0
    for package, *folders in SAMPLE:
        for path in _installed(package, *folders):
            data = path.read_bytes()
            for code in ("SHD502",):
                if OLD[code].holds(FileText(data)) and _tier2(code, data):
                    assert _new(code, data), (code, str(path))
                    checked += 1
    assert checked >= 3  # the sample holds files that tier 2 keeps


def test_factory_results_never_give_the_init_word() -> None:
    """The factory results (``Tree.words``' one step per call) never give ``init_process_group``:
    the scan need not read them."""
    for results in ast_tree._factory_results().values():
        assert "init_process_group" not in results
