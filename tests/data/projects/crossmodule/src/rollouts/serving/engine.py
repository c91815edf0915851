from concurrent.futures import ThreadPoolExecutor

import torch.distributed as dist

DECODER = ThreadPoolExecutor(8)


def start_engine(rank, world_size):
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    return DECODER
