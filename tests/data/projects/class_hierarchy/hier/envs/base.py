import asyncio
from abc import ABC, abstractmethod


class BaseEnv(ABC):
    @abstractmethod
    async def rollout(self, task):
        ...

    async def run_all(self, tasks):
        return await asyncio.gather(*[self.rollout(t) for t in tasks])  # flagged: DockerEnv.rollout owns a sandbox


class Scorer(ABC):
    @abstractmethod
    async def score(self, x):
        ...

    async def score_all(self, xs):
        return await asyncio.gather(*[self.score(x) for x in xs])  # near miss: no override owns anything
