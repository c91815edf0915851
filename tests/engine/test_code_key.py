"""The cache key of the code changes when a module that decides findings changes: a rule, the engine,
the facts package, the project index or the prefilter (an editable install keeps its version number)."""
from __future__ import annotations

import os

import pytest

from shutdown_lint import config

ENGINE = os.path.dirname(os.path.abspath(config.__file__))


@pytest.mark.parametrize("module", ["analyzer.py", "facts/exit_paths.py", "index/summary.py", "prefilter/ast_tree.py"])
def test_code_key_follows_engine_facts_and_index_modules(module):
    path = os.path.join(ENGINE, module)
    before = config.code_key()
    st = os.stat(path)
    try:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
        assert config.code_key() != before
    finally:
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert config.code_key() == before
