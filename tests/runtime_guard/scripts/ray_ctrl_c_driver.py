"""Driver blocked on a Ray task whose asyncio children hold 'sandbox' files (flowfactory #149 / lab demo).

argv: BOX_DIR MODE [sigterm-on-announce]  (MODE: plain = ray.get, guarded =
runtime_guard.ray.interruptible_get, wait-guarded = a `while refs: done, refs = interruptible_wait(refs)`
monitoring loop; sigterm-on-announce: the process sends itself SIGTERM the moment runtime_guard logs
that the cleanup wait begins, as a launcher that reacts to that line at once would)
Exits 130 after cleanup when guarded (KeyboardInterrupt re-raised, caught below).
"""
import asyncio
import logging
import os
import signal
import sys

import ray

box_dir, mode = sys.argv[1], sys.argv[2]
if sys.argv[3:] == ["sigterm-on-announce"]:
    class SigtermOnAnnounce(logging.StreamHandler):
        def emit(self, record):
            super().emit(record)
            if record.getMessage().startswith("runtime_guard: interrupted; cancelling"):
                os.kill(os.getpid(), signal.SIGTERM)

    logging.getLogger("runtime_guard").addHandler(SigtermOnAnnounce(sys.stderr))
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
# A launcher that masked SIGINT: interruptible_get must reinstall a working handler.
signal.signal(signal.SIGINT, signal.SIG_IGN)


@ray.remote(max_retries=0)
def entry(d):
    async def child(i):
        open(f"{d}/box{i}", "w").close()
        try:
            await asyncio.sleep(100)
        finally:
            # long enough that the test's SIGTERM, sent once the cleanup wait has begun, lands during it
            await asyncio.sleep(1.0)
            os.remove(f"{d}/box{i}")

    async def main():
        # return_exceptions=True: a cancelled gather then waits for every child's cleanup (without
        # it, it returns when the first child is done and asyncio.run cancels the rest mid-cleanup)
        await asyncio.gather(*[child(i) for i in range(5)], return_exceptions=True)

    asyncio.run(main())


ref = entry.remote(box_dir)
print("driver waiting", flush=True)
try:
    if mode == "guarded":
        import runtime_guard

        runtime_guard.ray.interruptible_get(ref, cleanup_timeout=20)
    elif mode == "wait-guarded":
        import runtime_guard

        refs = [ref]
        while refs:
            done, refs = runtime_guard.ray.interruptible_wait(refs, num_returns=1, cleanup_timeout=20)
    else:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        ray.get(ref)
except KeyboardInterrupt:
    print("KeyboardInterrupt after cleanup", flush=True)
    sys.exit(130)
