"""``words.ModuleAttr`` compiles its regexes on first use (start-up: the rules' 40 conditions
cost ~0.12 CPU-s to compile, a third of a one-file run), and ``words.compile_all`` compiles
them all ahead of a fork. Same patterns, same answers either way."""

from __future__ import annotations

from shutdown_lint.prefilter import words

_NAMES = ("_sources", "literal", "aliased", "not_attr", "prefix_value", "plain_import")
_SOURCE = b"import torch.distributed as dist\ndist.destroy_process_group()\n"


def _compiled(cond: words.ModuleAttr) -> set[str]:
    return {n for n in _NAMES[1:] if n in vars(cond)}


def test_nothing_is_compiled_before_a_file_needs_it():
    cond = words.ModuleAttr("torch.distributed.destroy_process_group")
    assert _compiled(cond) == set()
    assert not cond.holds(words.FileText(b"x = 1\n"))  # no ``torch``: no regex read
    assert _compiled(cond) == set()
    assert cond.holds(words.FileText(_SOURCE))
    assert _compiled(cond)  # the ones this file's scan read


def test_compile_all_compiles_every_pattern_of_a_live_condition():
    cond = words.ModuleAttr("torch.distributed.destroy_process_group")
    words.compile_all()
    assert _compiled(cond) == set(_NAMES[1:])
    assert cond.prefix_value is not None and cond.prefix_value.pattern == cond._sources["prefix_value"]
    assert cond.literal.pattern == cond._sources["literal"]


def test_lazy_and_eager_answer_alike():
    texts = [_SOURCE, b"from torch import distributed\ndistributed.destroy_process_group()\n",
             b"import torch\ntorch.cuda.synchronize()\n", b"import torch.distributed\n"]
    lazy = words.ModuleAttr("torch.distributed.destroy_process_group")
    lazily = [lazy.holds(words.FileText(text)) for text in texts]
    eager = words.ModuleAttr("torch.distributed.destroy_process_group")
    words.compile_all()
    assert lazily == [eager.holds(words.FileText(text)) for text in texts] == [True, True, False, False]
