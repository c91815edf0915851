import asyncio

from .loop import drain, poll_forever


async def main(queue):
    asyncio.create_task(poll_forever(queue))
    asyncio.create_task(drain(queue))  # the finally's error is lost
    await queue.wait()
