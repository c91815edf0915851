class PlainEnv:
    """Near miss: a callee in another module that owns nothing."""

    async def rollout(self, x):
        return x * 2
