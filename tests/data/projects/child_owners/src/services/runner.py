from .base import Owned


def serve(cmd):
    owned = Owned(cmd)
    try:
        return work(owned)
    finally:
        owned.worker.kill()


def work(owned):
    return owned
