import torch.distributed as dist

from .distributed.utils import SCORER, Loader, init_distributed


class Trainer:
    def __init__(self, rank, world_size):
        init_distributed(rank, world_size)
        self.loader = Loader()

    def shutdown(self):
        self.loader.pool.shutdown(wait=False)
        dist.destroy_process_group()


def cleanup():
    SCORER.shutdown(cancel_futures=True)


def main():
    trainer = Trainer(0, 1)
    try:
        pass
    finally:
        trainer.shutdown()
        cleanup()
