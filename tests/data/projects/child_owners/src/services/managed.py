from .base import Engine, Leaky


class ManagedEngine(Engine):
    def shutdown(self):
        self.engine_proc.terminate()
        self.engine_proc.wait(timeout=10)


class LoudLeaky(Leaky):
    def report(self):
        print("leaky pid", self.leaky_proc.pid)
