"""The project index's roots are settled before any name is resolved, so what a rule learns
about other modules does not depend on which files a worker linted before (issue 30's
byte-identical comparisons found it: at HEAD b2b4662 a SkyRL module in a namespace
sub-package had importers in a full run and none with ``--select SHD502``, and -j2 runs
differed from one another)."""

from __future__ import annotations

import os

from shutdown_lint.index.project import ProjectIndex

from .conftest import run_sub, write

WORKER = "import torch.distributed as dist\nclass MegatronWorker:\n    def init(self):\n        dist.init_process_group('gloo')\n"
BACKEND = ("from skyrl.workers.megatron.megatron_worker import MegatronWorker\n\n"
           "def main():\n    w = MegatronWorker()\n    w.init()\n")


def _project(tmp_path):
    """``Sky-RL/`` (not an identifier: no name from the run's root) holding package ``skyrl``
    whose ``workers/megatron/`` has no ``__init__.py`` (a namespace sub-package), and an
    unrelated folder of scripts listed before it."""
    root = tmp_path / "proj"
    for init in ("skyrl/__init__.py", "skyrl/workers/__init__.py", "skyrl/backends/__init__.py"):
        write(root / "Sky-RL" / init, "")
    worker = write(root / "Sky-RL/skyrl/workers/megatron/megatron_worker.py", WORKER)
    write(root / "Sky-RL/skyrl/backends/train_backend.py", BACKEND)
    write(root / "Other-Proj/tool/run.py", "import os\n")
    for i in range(10):  # enough files for a pool at -j2 (runner.SERIAL_THRESHOLD)
        write(root / f"Other-Proj/tool/m{i:02}.py", "import os\n")
    return root, worker


def test_names_and_importers_do_not_depend_on_what_was_asked_first(tmp_path, monkeypatch):
    root, worker = _project(tmp_path)
    monkeypatch.chdir(root)
    expected_names = ["skyrl.workers.megatron.megatron_worker", "megatron_worker"]
    fresh = ProjectIndex(["."])
    assert fresh.module_names(str(worker)) == expected_names
    assert [os.path.relpath(p) for p in ProjectIndex(["."]).importers(str(worker))] == [
        os.path.join("Sky-RL", "skyrl", "backends", "train_backend.py")]
    # every file's names asked first, in either order: the same answers
    for order in (sorted, lambda fs: sorted(fs, reverse=True)):
        index = ProjectIndex(["."])
        for f in order(index.project_files()):
            index.module_names(f)
        assert index.module_names(str(worker)) == expected_names
        assert index.importers(str(worker)) == ProjectIndex(["."]).importers(str(worker))


def test_the_roots_do_not_change_once_settled(tmp_path, monkeypatch):
    root, worker = _project(tmp_path)
    monkeypatch.chdir(root)
    index = ProjectIndex(["."])
    index.module_names(str(worker))
    settled = [(r.dir, r.only) for r in index.roots]
    # a file outside the project's files (an artefact folder the walk skips) still gets its
    # names from its own package root, without adding that root for everyone after it
    outside = write(root / "build" / "gen.py", "import os\n")
    assert index.module_names(str(outside)) == ["build.gen", "gen"]
    index.module_names(str(root / "Other-Proj/tool/run.py"))
    assert [(r.dir, r.only) for r in index.roots] == settled


def test_a_run_reports_the_same_with_any_selection_and_any_number_of_workers(tmp_path):
    root, _ = _project(tmp_path)
    outs = []
    for args in (("--select", "SHD502"), ("--select", "SHD502,SHD301"), ("-j1",), ("-j2",)):
        r = run_sub(root, "--no-cache", "--exit-zero", "--output-format", "concise", *args, ".")
        assert r.returncode == 0, r.stderr.decode()
        outs.append([line for line in r.stdout.decode().splitlines() if "SHD502" in line])
    assert outs[0] and "modules that import it: Sky-RL/skyrl/backends/train_backend.py" in outs[0][0], outs[0]
    assert all(o == outs[0] for o in outs), outs
