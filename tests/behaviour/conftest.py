"""Fixtures the behaviour tests share."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def ray_address():
    """One local Ray cluster (``ray.init(num_cpus=4)`` in this process) for a module's driver
    subprocesses, which join it with ``RAY_ADDRESS`` (``ray_scaffold.driver(..., address=)``): a
    driver then costs a connection, not a cluster start (~10 s, ~4 s of CPU). A driver that exits
    ends its job, and Ray kills the job's workers, as a local cluster's exit does. 4 CPUs: the
    before and after drivers of a test run at the same time, each with 2 one-CPU tasks at most."""
    import ray

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
