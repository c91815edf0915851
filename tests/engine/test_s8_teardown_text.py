"""Issue 30: the text gate of the teardown search (``ProjectIndex.no_teardown_path``) reads the
words more closely, so fewer importers are summarised (ray+torch: 411 more of 4,864 files pass).

- A registration is a call whose last name ends in ``register`` or ``signal``, or is
  ``add_signal_handler`` (``summary._registration``, ``ProjectView.registered``): a word that only
  starts with one (``register_buffer``, ``signal_name``, ``registered``) no longer keeps the
  importer read (``_REGISTRATION``).
- An ``except``/``finally`` clause starts a logical line: a word after other text on its line
  (prose, ``# all ranks except rank 0``) is not one. A clause at column 0 after a line that is a
  lone backslash is indented (Python joins the two lines): the earlier gate skipped such an
  importer, and missed the shutdown it makes (``backslash clause`` below).

Each near miss is linted in real command-line runs with and without the gate; the cache tests
show that an importer the gate skipped re-lints the module searched from when it gains a
teardown path, and the other way round.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from shutdown_lint.index.text_facts import _REGISTRATION, _indented_clause

from .conftest import warm_after
from .test_s7_teardown_text import FINDING, _cut_holds, _lint, _project

pytestmark = pytest.mark.timeout(300)

#: ``b`` shuts the pool down (through ``helper.drain()``) on a teardown path: it stays read
KEPT = {
    "backslash clause": ("import helper\n\n\ndef main():\n    try:\n        work()\n    \\\n"
                         "finally:\n        helper.drain()\n"),
    "backslash clause crlf": ("import helper\r\n\r\n\r\ndef main():\r\n    try:\r\n        work()\r\n    \\\r\n"
                              "except KeyboardInterrupt:\r\n        helper.drain()\r\n        raise\r\n"),
    "register spaced": ("import atexit\n\nimport helper\n\n\ndef handler():\n    helper.drain()\n\n\n"
                        "atexit.register (handler)\n"),
    "register continued": ("import atexit\n\nimport helper\n\n\ndef handler():\n    helper.drain()\n\n\n"
                           "atexit.register\\\n(handler)\n"),
    "any register": ("import helper\nfrom hooks import HOOKS\n\n\ndef handler():\n    helper.drain()\n\n\n"
                     "HOOKS.on_exit_register(handler)\n"),
    "register in a function": ("import atexit\n\nimport helper\n\n\ndef handler():\n    helper.drain()\n\n\n"
                               "def install():\n    atexit.register(handler)\n"),
    "signal handler": ("import helper\n\n\ndef handler():\n    helper.drain()\n\n\n"
                       "def install(loop):\n    loop.add_signal_handler(15, handler)\n"),
}
#: ``b`` has no teardown path, though the earlier gate read it: the gate skips it, the finding stays
CUT = {
    "register prefix": ("import helper\n\n\ndef main(model):\n    model.register_buffer('x', None)\n"
                        "    helper.drain()\n"),
    "registered": "import helper\n\nREGISTERED = {}\n\n\ndef main():\n    helper.drain()\n",
    "signal prefix": "import helper\n\n\ndef main(signal_name):\n    helper.drain()\n",
    "prose except": ('import helper\n\n\ndef main():\n    """Drain all workers except the first; finally\n'
                     '    stop."""\n    helper.drain()  # every rank except rank 0\n'),
    "module try": ("try:\n    import helper\nexcept ImportError:\n    helper = None\nfinally:\n    pass\n\n\n"
                   "def main():\n    helper.drain()\n"),
}


def test_text_conditions() -> None:
    assert _indented_clause(b"def f():\n    try:\n        g()\n    \\\nexcept E:\n        h()\n")
    assert _indented_clause(b"def f():\r    try:\r        g()\r    \\\rfinally:\r        h()\r")
    assert _indented_clause(b"\tfinally:\n")
    assert _indented_clause(b"x = 1\n  \x0bexcept E:\n")
    assert not _indented_clause(b"x = 1  # all but rank 0, except when\n")
    assert not _indented_clause(b"exceptional = 1\n  finally_ = 2\n  _except = 3\n")
    assert not _indented_clause(b"try:\n    pass\nexcept E:\n    pass\nfinally:\n    pass\n")
    for hit in (b"atexit.register(f)", b"x.myregister(f)", b"signal.signal(s, f)", b"loop.add_signal_handler(s, f)",
                b"register\n", b"x.register"):
        assert _REGISTRATION.search(hit), hit
    for miss in (b"self.register_buffer('a', b)", b"registered = 1", b"signal_name", b"signals", b"registry"):
        assert not _REGISTRATION.search(miss), miss


@pytest.mark.parametrize("case", sorted(KEPT))
def test_a_teardown_path_keeps_the_importer_read(tmp_path: Path, case: str) -> None:
    root = _project(tmp_path, KEPT[case])
    assert not _cut_holds(root)
    assert _lint(root, "--no-cache", cut=False) == []  # the shutdown is found through b
    assert _lint(root, "--no-cache") == []


@pytest.mark.parametrize("case", sorted(CUT))
def test_an_importer_without_a_teardown_path_is_not_read(tmp_path: Path, case: str) -> None:
    root = _project(tmp_path, CUT[case])
    assert _cut_holds(root)
    assert _lint(root, "--no-cache", cut=False) == FINDING
    assert _lint(root, "--no-cache") == FINDING


def _warm_equals_cold(root: Path, change) -> list[tuple]:  # type: ignore[no-untyped-def]
    _lint(root)  # fills the cache
    _lint(root)  # warm, nothing changed
    return warm_after(lambda *extra: _lint(root, *extra), change)


@pytest.mark.parametrize("gained", ["register continued", "backslash clause"])
def test_a_skipped_importer_that_gains_a_teardown_path(tmp_path: Path, gained: str) -> None:
    root = _project(tmp_path, CUT["register prefix"])
    assert _lint(root) == FINDING  # b was not read
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(KEPT[gained])) == []


def test_an_importer_that_loses_its_teardown_path(tmp_path: Path) -> None:
    root = _project(tmp_path, KEPT["signal handler"])
    assert _lint(root) == []
    assert _warm_equals_cold(root, lambda: (root / "b.py").write_text(CUT["prose except"])) == FINDING
