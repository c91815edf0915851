from .base import BaseTrainer


class Trainer(BaseTrainer):
    ok = True

    def fit(self):
        self.prepare()
        self._loop()

    def prepare(self):
        pass
