import runtime_guard


class SafeWorker:
    def __init__(self):
        runtime_guard.ray.setup_worker()

    async def serve(self, task):
        try:
            return task
        finally:
            await self.release()

    async def release(self):
        pass
