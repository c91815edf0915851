"""Children kept on ``self``: stopped in the class, handed on, or never stopped."""

import subprocess
from subprocess import PIPE, Popen


class Tokenizer:
    """Never stopped anywhere: the pipe ties the child to this object."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdin=PIPE, stdout=PIPE, text=True)  # expect: SHD602

    def encode(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def alive(self):
        return self.proc.poll() is None


class Sidecar:
    """Started in a local name, then kept on ``self``: never stopped."""

    def start(self, cmd):
        proc = Popen(cmd, stdout=PIPE)  # expect: SHD602
        self.sidecar = proc
        print("sidecar pid", proc.pid)


class Scorer:
    """Near miss: close() terminates and waits."""

    def __init__(self, cmd):
        self.proc = Popen(cmd, stdin=PIPE, stdout=PIPE)

    def close(self):
        self.proc.terminate()
        self.proc.wait()


class Judge:
    """Near miss: __exit__ kills it through a helper whose name says so."""

    def __enter__(self):
        self._child = subprocess.Popen(["judge"], stdout=subprocess.PIPE)
        return self

    def __exit__(self, *exc):
        _reap(self._child)


class Pool:
    """Near miss: the child is handed on (registered with a manager that stops it)."""

    def __init__(self, manager, cmd):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
        manager.track(self.proc)


class Watcher:
    """Near miss: waited for with a poll loop in a method."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)

    def join(self):
        while self.proc.poll() is None:
            self.proc.stdout.readline()


class Router:
    """No pipe, never stopped: the object keeps the child as its own (rllm's sglang router)."""

    def launch(self, urls):
        self.router_process = subprocess.Popen(["python3", "-m", "router", *urls])  # expect: SHD602
        return "http://127.0.0.1:30000"


class Daemonised:
    """Near miss: its own session, never stopped: detached on purpose."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdout=PIPE, start_new_session=True)


class SharedName:
    """Near miss (this module): another object's ``.proc`` is killed elsewhere in the module."""

    def __init__(self, cmd):
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)


def stop_shared(holder: SharedName):
    holder.proc.kill()


def _reap(child):
    child.kill()
    child.wait()
