"""Handlers that propagate the cancellation on every way out (or that never see it)."""

import asyncio

import anyio


async def every_branch(job, fast):
    try:
        await job.run()
    except asyncio.CancelledError:
        if fast:
            raise
        else:
            job.log("slow")
            raise


async def literal_loop(job):
    try:
        await job.run()
    except BaseException:
        for attempt in [1, 2]:
            raise


async def endless_raise(job):
    try:
        await job.run()
    except BaseException:
        while True:
            raise


async def every_case(job, mode):
    try:
        await job.run()
    except asyncio.CancelledError:
        match mode:
            case "strict":
                raise
            case _:
                job.log(mode)
                raise


async def new_cancellation(job):
    try:
        await job.run()
    except asyncio.CancelledError as e:
        raise asyncio.CancelledError(f"{job.name} cancelled") from e


async def saved_for_later(job):
    saved = None
    try:
        await job.run()
    except asyncio.CancelledError as e:
        saved = e
    await job.close()
    if saved is not None:
        raise saved


async def anyio_first(job):
    try:
        await job.run()
    except (ValueError, anyio.get_cancelled_exc_class()):
        raise
    except BaseException as exc:
        raise RuntimeError("worker failed") from exc


async def loop_else(job):
    try:
        await job.run()
    except BaseException:
        while job.pending():
            job.step()
        else:
            raise


async def nested_reraise(job):
    try:
        await job.run()
    except BaseException as e:
        try:
            await job.close()
        except BaseException as f:
            raise f
        raise e


async def exits(job):
    import sys

    try:
        await job.run()
    except BaseException:
        if job.fatal:
            sys.exit(1)
        raise
