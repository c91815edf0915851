"""The training driver (the hazardous version): starts the generation worker and waits.

Usage: python driver.py LEASE_DIR N FAIL_AT PID_FILE
"""
import sys

import ray

from worker import Generator


def main():
    lease_dir, n, fail_at, pid_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    ray.init(num_cpus=2, include_dashboard=False)
    gen = Generator.remote(lease_dir)
    ref = gen.generate.remote(n, fail_at)
    with open(pid_file, "w") as f:
        f.write(str(ray.get(gen.pid.remote(), timeout=60)))
    print("generating", flush=True)
    results = ray.get(ref)
    print("generated", len(results), flush=True)


if __name__ == "__main__":
    main()
