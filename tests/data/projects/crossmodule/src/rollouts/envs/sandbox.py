from .base import BaseEnv


class SandboxEnv(BaseEnv):
    """`rollout` is inherited from a base class in another module."""

    name = "sandbox"
