"""A rollout package whose hazards all cross a module boundary (tests/engine/test_project_index.py)."""
from .envs import PlainEnv, SandboxEnv  # re-exported

__all__ = ["PlainEnv", "SandboxEnv"]
