"""Suppression comments found by tokenizing only the statements that hold a mark
(``suppression._marked_comments``, given Python's ``ast``) are those the whole file's
tokenization finds: the same suppressions, unknown codes and comment texts."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

from shutdown_lint import registry, suppression

CASES = {
    "simple": "import os\nx = os.getpid()  # noqa: SHD101\ny = 2\n",
    "in_strings": 'S = """\n# noqa: SHD101\nnot a comment  # shutdown-lint: ignore\n"""\nT = "# noqa"  # noqa: SHD999\n',
    "nested": ("class A:\n    '''doc # noqa'''\n\n    @staticmethod\n    @dec(  # noqa: SHD102\n        1)\n"
               "    def f(a,  # noqa: SHD103\n          b):\n        # noqa: SHD104\n        if a: b()  # noqa: SHD105\n"
               "        try:\n            x = '''\n  # noqa: SHD106\n'''\n        except (ValueError,  # noqa: SHD107\n"
               "                OSError):\n            pass\n        else:  # noqa: SHD108\n            pass\n"
               "        finally:  # noqa\n            pass\n        while a:\n            pass\n        else:  # noqa: SHD109\n"
               "            pass\n        if a:\n            pass\n        elif b:  # noqa: SHD110\n            c = 1; d = 2  # noqa: SHD111\n"),
    "continuations": "x = 1 + \\\n    2  # noqa: SHD101\nif (x and  # shutdown-lint: ignore[SHD102, bogus-name]\n        x): y = 3  # NOQA\n",
    "crlf": "import os\r\nx = 1  # noqa: SHD101\r\ndef f():\r\n    return 2  # noqa: SHD102\r\n",
    "lone_cr": "import os\rx = 1  # noqa: SHD101\ry = '''\r# noqa: SHD102\r'''\n",
    "between": "x = 1\n# noqa: SHD101\n\n\n    # shutdown-lint: ignore\ny = 2\n",
    "unknown": "x = 1  # noqa: SHD999, E501\ny = 2  # shutdown-lint: ignore[not-a-rule]\n",
}
if sys.version_info >= (3, 10):
    CASES["match"] = ("match x:\n    case [1,  # noqa: SHD101\n          2]:\n        pass  # noqa: SHD102\n"
                      "    case '''a\n# noqa: SHD103\n''':  # noqa: SHD104\n        pass\n")

ROOT = pathlib.Path(suppression.__file__).resolve().parents[1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_same_suppressions_as_tokenizing_everything(name):
    whole = _same(CASES[name])
    assert whole.by_line  # each case suppresses something


def test_the_same_on_this_repository():
    for path in [p for d in ("shutdown_lint", "rules", "tests", "runtime_guard") for p in sorted((ROOT / d).rglob("*.py"))]:
        text = path.read_text(encoding="utf-8")
        if "noqa" in text.lower() or "shutdown-lint" in text.lower():
            _same(text)


def _same(text: str) -> suppression.Suppressions:
    known, names = set(registry.rules_by_code()), registry.names_to_codes()
    whole = suppression.parse(text, known, names)
    narrow = suppression.parse(text, known, names, ast.parse(text))
    assert (narrow.by_line, narrow.unknown, narrow.comments) == (whole.by_line, whole.unknown, whole.comments)
    return whole
