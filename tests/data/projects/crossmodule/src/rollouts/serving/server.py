from rollouts.serving.engine import start_engine


def serve(rank):
    engine = start_engine(rank, 2)
    return engine
