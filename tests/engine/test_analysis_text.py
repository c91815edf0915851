"""``Analysis.text`` decodes the parsed bytes instead of rendering the module: it must be
the module's own code for every encoding, newline style and BOM libcst accepts."""

import pytest

from shutdown_lint.analyzer import analyze
from shutdown_lint.registry import all_rules
from shutdown_lint.settings import Settings

HAZARD = "import time\n\nasync def f():\n    time.sleep(1)  # noqa: SHD301 é\n"


@pytest.mark.parametrize("source", [
    HAZARD.encode(),
    b"\xef\xbb\xbf" + HAZARD.encode(),
    HAZARD.replace("\n", "\r\n").encode(),
    ("# -*- coding: latin-1 -*-\n" + HAZARD).encode("latin-1"),
    HAZARD.rstrip("\n").encode(),
    (HAZARD + "\x0c\nx = 1\n").encode(),
], ids=["utf8", "bom", "crlf", "latin1", "no-final-newline", "formfeed"])
def test_text_is_the_module_code(source):
    settings = Settings(selected=tuple(sorted(r.code for r in all_rules())))
    analysis = analyze(source, "t.py", settings)
    assert analysis is not None and analysis.findings
    assert analysis.text == analysis.module.code
    noqa_line = next(i for i, line in enumerate(analysis.text.splitlines(), 1) if "noqa" in line)
    assert analysis.suppressions.suppresses(noqa_line, "SHD301")
    assert not analysis.active_findings()
