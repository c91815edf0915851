"""``multiprocessing`` context objects: ``ctx.Process`` is a ``multiprocessing.Process``."""

import multiprocessing as mp

import torch.multiprocessing as tmp


def fit(cfg):
    return cfg


def produce(cfg):
    return cfg


def train(cfg):
    ctx = mp.get_context("spawn")
    loader = ctx.Process(target=produce, args=(cfg,))  # expect: SHD602
    loader.start()
    fit(cfg)
    loader.join()


def train_inline(cfg):
    loader = mp.get_context("forkserver").Process(target=produce, args=(cfg,))  # expect: SHD602
    loader.start()
    fit(cfg)
    loader.join()


def train_torch(cfg):
    ctx = tmp.get_context("spawn")
    loader = ctx.Process(target=produce, args=(cfg,))  # expect: SHD602
    loader.start()
    fit(cfg)
    loader.join()


def train_daemon(cfg):
    ctx = mp.get_context("spawn")
    loader = ctx.Process(target=produce, args=(cfg,), daemon=True)
    loader.start()
    fit(cfg)
    loader.join()


def train_finally(cfg):
    ctx = mp.get_context("spawn")
    loader = ctx.Process(target=produce, args=(cfg,))
    loader.start()
    try:
        fit(cfg)
    finally:
        loader.terminate()
        loader.join()


def queue_not_process(cfg):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    q.put(cfg)
    fit(cfg)
    q.close()


class NotAContext:
    def Process(self, **kw):
        return kw


def not_a_context(cfg):
    ctx = NotAContext()
    loader = ctx.Process(target=produce)
    loader.start()
    fit(cfg)
    loader.join()
