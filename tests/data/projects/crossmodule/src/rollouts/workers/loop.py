import asyncio
import logging


async def poll_forever(queue):
    """Near miss: catches everything, nothing escapes."""
    while True:
        try:
            await queue.step()
        except Exception:
            logging.exception("poll failed")
        await asyncio.sleep(1)


async def drain(queue):
    """Catches everything except what its finally raises."""
    try:
        await queue.run()
    except Exception:
        logging.exception("drain failed")
    finally:
        if queue.dirty:
            raise RuntimeError("queue left dirty")
