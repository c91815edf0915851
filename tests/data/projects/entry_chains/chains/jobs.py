from .report import retry_upload, upload_or_fail


class Job:
    def run_all(self):
        try:
            self.work()
        except KeyboardInterrupt:  # flagged: console script chains-jobs -> run() -> Job().run_all()
            print("stopping")

    def work(self):
        pass


def run():
    Job().run_all()


def run_forever():
    while True:
        retry_upload()


def checked():
    upload_or_fail()
    raise RuntimeError("upload must not be interrupted")
