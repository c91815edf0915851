"""One rank of a 2-rank gloo group: installs the SIGTERM teardown, signals readiness, idles.

argv: RANK WORLD STORE_FILE READY_DIR SCENARIO(ok|hang|peer-dead|blocked) GRACE

``blocked``: rank 1 then waits in an ``all_reduce`` that rank 0 never joins (rank 0 idles), so its
main thread is inside a C++ call when SIGTERM arrives (the process-group timeout is 120 s).
"""
import logging
import os
import sys
import time

import torch.distributed as dist

rank, world, store, ready_dir, scenario, grace = (int(sys.argv[1]), int(sys.argv[2]), sys.argv[3],
                                                  sys.argv[4], sys.argv[5], float(sys.argv[6]))
logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world,
                        timeout=__import__("datetime").timedelta(seconds=120))
t = dist.all_reduce(__import__("torch").ones(4))
import runtime_guard  # noqa: E402

if scenario == "hang":
    # A wedged teardown step (a stuck NCCL communicator): the grace watchdog must still end us.
    dist.destroy_process_group = lambda *a, **k: time.sleep(1000)
runtime_guard.torch.install_distributed_teardown(grace=grace)
orig_destroy = dist.destroy_process_group


def destroy(*a, **k):
    t0 = time.monotonic()
    orig_destroy(*a, **k)
    print(f"DESTROYED rank={rank} in {time.monotonic() - t0:.3f}s initialized={dist.is_initialized()}", flush=True)


if scenario != "hang":
    dist.destroy_process_group = destroy
open(os.path.join(ready_dir, f"ready{rank}"), "w").close()
if scenario == "blocked" and rank == 1:
    dist.all_reduce(__import__("torch").ones(4))  # never completes: rank 0 does not join
    print("ALL_REDUCE RETURNED", flush=True)
while True:
    time.sleep(0.05)
