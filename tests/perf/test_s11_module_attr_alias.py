"""Tier 1's ``ModuleAttr`` (``words.qualified``) must admit every spelling the facts resolve to
the name: a dotted module prefix bound to a name (``dist = torch.distributed``) is followed by
the facts like a bound root (``t = torch``), so it may lead to ``torch.distributed.X``.

Found by the candidate tiers losing a SHD502 finding: reported with the tiers off, not with them
on (session 11)."""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.prefilter import select
from shutdown_lint.prefilter.words import FileText, ModuleAttr
from shutdown_lint.settings import Settings

INIT = "torch.distributed.init_process_group"


@pytest.mark.parametrize("src, holds", [
    ("import torch\ndist = torch.distributed\ndist.init_process_group('gloo')\n", True),
    ("import torch\ndist = torch . distributed\ndist.init_process_group('gloo')\n", True),
    ("import torch\nif (d := torch.distributed):\n    d.init_process_group('gloo')\n", True),
    ("import torch\ndef f(d=torch.distributed):\n    d.init_process_group('gloo')\n", True),
    ("import torch\nx = [torch.distributed]\nx[0].init_process_group('gloo')\n", True),
    # the name spelled out, as before
    ("import torch.distributed\ntorch.distributed.init_process_group('gloo')\n", True),
    # near misses: nothing can lead to the name
    ("import torch.distributed\ntorch.distributed.rpc.init_process_group = 1\n", False),
    ("import torch.distributed  # comment\nother.init_process_group()\n", False),
    ("import torch\ny = x.torch.distributed\ny.init_process_group()\n", False),
    ("import torch\nz = torch.distributed_c10d\nz.init_process_group()\n", False),
])
def test_prefix_bound_to_a_name(src, holds):
    assert ModuleAttr(INIT).holds(FileText(src.encode())) is holds


PROJECT = textwrap.dedent("""\
    import torch
    dist = torch.distributed


    def main():
        dist.init_process_group("gloo")
        work()


    def work():
        pass


    if __name__ == "__main__":
        main()
""")


def test_finding_kept_with_the_tiers_on():
    settings = Settings(selected=("SHD502",))
    on = lint_source(PROJECT.encode(), "train.py", settings)
    with select.disabled():
        off = lint_source(PROJECT.encode(), "train.py", settings)
    assert [d.code for d in off.diagnostics] == ["SHD502"]
    assert [(d.code, d.line) for d in on.diagnostics] == [(d.code, d.line) for d in off.diagnostics]


# Tier-1 conditions that read more than one token spell the gap between them with ``words.GAP``:
# a backslash continuation (or, inside brackets, a comment) is a gap too. Each source has a
# finding with the tiers off; the tiers on must keep it (found by helper TRIG's property test).
_CONTINUED = {
    "SHD402": "import asyncio\n\n\nasync def main():\n    pass\n\n\nif __name__ == '__main__':\n"
              "    asyncio.\\\n        run(main())\n",
    "SHD403": "import ray\n\n\n@ray.remote\ndef f():\n    return 1\n\n\ndef main():\n    ray.init()\n"
              "    print(ray.\\\n        get([f.remote() for _ in range(4)]))\n",
    "SHD104": "import asyncio\n\n\nasync def worker():\n    while True:\n        try:\n"
              "            await asyncio.sleep(1)\n        except \\\n            :\n            continue\n",
}


@pytest.mark.parametrize("code", sorted(_CONTINUED))
def test_continued_spelling_keeps_the_finding(code):
    src = _CONTINUED[code].encode()
    settings = Settings(selected=(code,))
    on = lint_source(src, "job.py", settings)
    with select.disabled():
        off = lint_source(src, "job.py", settings)
    assert [d.code for d in off.diagnostics] == [code], off
    assert [(d.code, d.line) for d in on.diagnostics] == [(d.code, d.line) for d in off.diagnostics]


def test_driver_context_reads_a_continued_def():
    from shutdown_lint.prefilter.words import context

    for src in ("def \\\n  main():\n    pass\n", "def main \\\n ():\n    pass\n", "def main():\n    pass\n"):
        assert context("driver").holds(FileText(src.encode())), src
    assert not context("driver").holds(FileText(b"def mainly():\n    pass\n"))
