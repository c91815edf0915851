"""CUDA/NCCL validation of runtime_guard (docs/gpu-validation.md).

Every test here is marked ``cuda`` and needs a CUDA build of torch with a GPU: where there is
none (CI, developer laptops) they are skipped with that reason, and the CPU/gloo versions of the
same checks run in tests/runtime_guard and tests/behaviour. Run them on a GPU machine with
``python -m pytest tests/gpu``.
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

HAS_CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).resolve().parent
    skip = pytest.mark.skip(reason="needs a CUDA GPU: none on this machine (the CPU/gloo versions of these "
                                   "checks run in tests/runtime_guard and tests/behaviour)")
    for item in items:
        if Path(str(item.fspath)).resolve().parent == here:
            item.add_marker(pytest.mark.cuda)
            if not HAS_CUDA:
                item.add_marker(skip)
