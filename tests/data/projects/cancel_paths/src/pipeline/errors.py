class StageFailed(Exception):
    pass
