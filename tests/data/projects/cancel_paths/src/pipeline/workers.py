import asyncio

from .errors import StageFailed


async def poll(source, fast):
    try:
        await source.wait()
    except asyncio.CancelledError:  # expect: SHD104
        if fast:
            raise
        source.mark_slow()


async def retrying(source):
    try:
        await source.fetch()
    except BaseException:  # expect: SHD104
        while source.should_retry():
            raise
        source.note_failure()


async def drain(queue, mode):
    try:
        await queue.join()
    except asyncio.CancelledError:  # expect: SHD104
        match mode:
            case "strict":
                raise
            case "lenient":
                queue.clear()


async def stage(job):
    try:
        await job.run()
    except asyncio.CancelledError as e:
        raise StageFailed(job.name) from e  # expect: SHD104


async def loop(jobs):
    for job in jobs:
        try:
            await job.run()
        except BaseException:  # expect: SHD104
            if job.optional:
                continue  # expect: SHD104
            raise


async def interrupted(job):
    try:
        await job.run()
    except (asyncio.CancelledError, KeyboardInterrupt):  # expect: SHD104
        job.log("stopped")


async def shielded(job):
    try:
        await job.run()
    except BaseException:  # expect: SHD104
        job.log("stopped")
    except:  # noqa: E722  (never runs: BaseException above catches everything)
        job.log("never")


async def cleanup(job):
    try:
        await job.run()
    except BaseException:
        try:
            await job.close()
        except ValueError as g:
            raise g  # expect: SHD104
        raise
