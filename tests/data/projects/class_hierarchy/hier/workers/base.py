import ray


class RolloutWorker:
    def __init__(self):
        self.pending = []

    def stop(self, ref):
        ray.cancel(ref)
        raise RuntimeError("stopped")  # flagged (SHD501): runs in the actor factory.py makes

    def connect(self, ref):
        ray.init(address="auto", ignore_reinit_error=True)
        return ray.get(ref)  # near miss (SHD403): runs in the actor factory.py makes, not in the driver

    async def serve(self, task):
        try:
            return await self.work(task)
        finally:
            await self.release()

    async def work(self, task):
        return task

    async def release(self):
        pass


class LocalHelper:
    def stop(self, ref):
        ray.cancel(ref)
        raise RuntimeError("stopped")  # near miss: never part of an actor (driver-side helper, not the driver)
