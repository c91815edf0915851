"""Tier 1 (``prefilter.words``) skips a word that a ``#`` precedes on its line with no quote
before it: a comment, or a line inside a multi-line string. Inside a triple-quoted f-string
such a line may hold a replacement field, whose expression is code: ``f\"\"\"`` newline
``#{dist.init_process_group("gloo")}``. Found by T1DIST (session 14): with the candidate
tiers on, SHD502 lost that finding (tiers off reported it). ``_in_comment`` now reads a ``{``
after the ``#`` as a possible field."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from shutdown_lint.prefilter import words as W

FIELD = 'import torch.distributed as dist\n\n\ndef setup():\n    text = f"""\n#{dist.init_process_group("gloo")}\n"""\n    return text\n'
SPEC = 'import torch.distributed as dist\n\n\ndef setup(x):\n    return f"""\n#{x:#{dist.init_process_group()}}\n"""\n'
COMMENT = "import torch.distributed as dist\n\n\ndef setup():\n    # dist.init_process_group('gloo') runs elsewhere\n    return 1\n"
IN_STRING = 'import torch.distributed as dist\n\n\ndef setup():\n    """Call\n    # dist.init_process_group() first."""\n'


@pytest.mark.parametrize("source,code", [(FIELD, True), (SPEC, True), (COMMENT, False), (IN_STRING, False)],
                         ids=["f-string field", "field in a format spec", "comment", "plain string"])
def test_a_word_in_an_f_string_field_is_code_and_one_in_a_comment_is_not(source, code):
    text = W.FileText(source.encode())
    assert text.has_word(b"init_process_group") is code
    assert (list(text.iter_positions(b"init_process_group")) != []) is code
    assert W._in_comment(source.encode(), source.index("init_process_group")) is not code


def _lint(tmp_path, source: str, tiers: bool) -> list[str]:
    path = tmp_path / "m.py"
    path.write_text(source)
    env = dict(os.environ, SHUTDOWN_LINT_CANDIDATES="1" if tiers else "0")
    done = subprocess.run([sys.executable, "-m", "shutdown_lint", "--no-cache", "--isolated", "-q", "--exit-zero",
                           "--output-format", "concise", str(path)], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    return [line.split(" ", 2)[1] for line in done.stdout.splitlines() if " SHD" in line]


@pytest.mark.parametrize("source", [FIELD, SPEC], ids=["f-string field", "field in a format spec"])
def test_the_tiers_keep_the_finding_in_an_f_string_field(tmp_path, source):
    off = _lint(tmp_path, source, tiers=False)
    assert "SHD502" in off
    assert _lint(tmp_path, source, tiers=True) == off  # before the fix: [] with the tiers on
