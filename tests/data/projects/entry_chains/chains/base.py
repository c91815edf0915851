import logging

log = logging.getLogger(__name__)


class BaseTrainer:
    steps = 10

    def _loop(self):
        try:
            for step in range(self.steps):
                self.step(step)
        except KeyboardInterrupt:  # flagged: train.py main() -> Trainer.fit() -> self._loop()
            log.warning("interrupted, saving")
            self.save()

    def evaluate(self):
        try:
            self.run_eval()
        except KeyboardInterrupt:  # near miss: main() may exit 2 after evaluate()
            log.warning("evaluation interrupted")

    def step(self, i):
        pass

    def save(self):
        pass

    def run_eval(self):
        pass
