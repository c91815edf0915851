"""The cache key of the code changes when a module that decides findings changes: a rule, the engine,
the facts package, the project index or the prefilter (an editable install keeps its version number).

The modules touched are those of a copy of the package, in a subprocess: touching the installed
ones raced with every other test computing the key at the same moment (two of these cases on two
xdist workers each saw the other's touch, and failed).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from shutdown_lint import config

ENGINE = os.path.dirname(os.path.abspath(config.__file__))

PROBE = r"""
import json, os, sys
from shutdown_lint import config
assert config.__file__.startswith(sys.argv[1]), config.__file__  # the copy, not the installed package
path = os.path.join(os.path.dirname(config.__file__), sys.argv[2])
keys = [config.code_key()]
st = os.stat(path)
os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
keys.append(config.code_key())
os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
keys.append(config.code_key())
print(json.dumps(keys))
"""


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory):
    root = tmp_path_factory.mktemp("code_key")
    ignore = shutil.ignore_patterns("__pycache__")
    shutil.copytree(ENGINE, root / "shutdown_lint", ignore=ignore)
    shutil.copytree(config._rules_dir(), root / "shutdown_lint" / "rules", ignore=ignore)
    return str(root)


@pytest.mark.parametrize("module", ["analyzer.py", "facts/exit_paths.py", "index/summary.py",
                                    "prefilter/ast_tree.py", "rules/shd102_unobserved_task_exception.py"])
def test_code_key_follows_engine_facts_and_index_modules(package_copy, module):
    env = {**os.environ, "PYTHONPATH": package_copy}
    out = subprocess.run([sys.executable, "-c", PROBE, package_copy, module], cwd=package_copy, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    before, touched, restored = json.loads(out.stdout)
    assert before is not None
    assert touched != before
    assert restored == before
