import asyncio

from . import PlainEnv, SandboxEnv
from .agents.agent import run_agent as agent_main
from .agents.agent import score

env = SandboxEnv()


async def generate(xs):
    # one sandbox per prompt
    results = await asyncio.gather(*[env.rollout(x) for x in xs])  # keep order
    return results


async def generate_agents(tasks):
    return await asyncio.gather(*[agent_main(t) for t in tasks])


async def generate_plain(xs, plain: PlainEnv):
    return await asyncio.gather(*[plain.rollout(x) for x in xs])  # near miss: owns nothing


async def score_all(tasks):
    return await asyncio.gather(*[score(t) for t in tasks])  # near miss: owns nothing


class LocalRunner(SandboxEnv):
    async def many(self, xs):
        await asyncio.gather(*[self.rollout(x) for x in xs])
