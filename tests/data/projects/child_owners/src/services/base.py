"""A base class whose child is stopped by a subclass in another module (managed.py), and one
whose child nobody stops, anywhere in the project."""

import subprocess


class Engine:
    def launch(self, cmd):
        self.engine_proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)


class Leaky:
    def launch(self, cmd):
        self.leaky_proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)  # expect: SHD602

    def describe(self):
        return f"leaky child {self.leaky_proc.pid}"


class Owned:
    """Stopped by its owner in another module (runner.py): ``owned.worker.kill()``."""

    def __init__(self, cmd):
        self.worker = subprocess.Popen(cmd, stdout=subprocess.PIPE)
