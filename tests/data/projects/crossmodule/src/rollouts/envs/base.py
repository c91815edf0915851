import os


class BaseEnv:
    """Owns a sandbox per rollout: created here, deleted in the finally."""

    async def rollout(self, x):
        box = await self.create_box(x)
        try:
            return await box.run()
        finally:
            await box.delete()

    async def create_box(self, x):
        return Box(os.getpid(), x)


class Box:
    def __init__(self, pid, x):
        self.pid, self.x = pid, x

    async def run(self):
        return self.x

    async def delete(self):
        return None
