import asyncio


class Agent:
    async def run(self):
        try:
            await self.work()
        except (KeyboardInterrupt, asyncio.CancelledError):  # flagged: swallows the cancellation of asyncio.run's task
            print("agent stopped")

    async def idle(self):
        try:
            await self.work()
        except KeyboardInterrupt:  # near miss: asyncio.run cancels the task instead (Python 3.11+)
            print("never printed")

    async def work(self):
        await asyncio.sleep(0)

    async def main(self):
        await self.idle()
        await self.run()


def agent_main():
    asyncio.run(Agent().main())
