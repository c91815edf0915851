class JobError(Exception):
    pass


def wait_for_jobs():
    pass


def retry():
    pass


def launch():
    try:
        wait_for_jobs()
    except (KeyboardInterrupt, JobError) as e:  # near miss: only a JobError falls through (the interrupt is re-raised)
        if isinstance(e, JobError):
            retry()
        else:
            raise e
