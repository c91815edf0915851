from ..sandbox import Sandbox
from .base import BaseEnv, Scorer


class DockerEnv(BaseEnv):
    async def rollout(self, task):
        async with Sandbox.create() as box:
            return await box.run(task)


class LengthScorer(Scorer):
    async def score(self, x):
        return len(x)
