"""Near misses for the candidate tier 2 conditions (``Rule.candidate_tree``): small programs
just on either side of a condition, ``(source, the condition's value)``. ``test_candidates.py``
checks each value and that linting with the tiers on and off finds the same."""

# fmt: off
CASES: dict[str, list[tuple[str, bool]]] = {}

CASES["SHD501"] = [
    # 0 server coroutine forwarding its own cancellation: not interrupt, not driver, not worker;
    # no report, but a cancel in a handler stays a candidate (``_in_handler``)
    ("""
import asyncio, ray

class Router:
    async def call(self, ref):
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
""", True),
    # 1 the same method in a Ray async actor: the raise leaves a remote method -> reported
    ("""
import asyncio, ray

@ray.remote
class Router:
    async def call(self, ref):
        try:
            return await ref
        except asyncio.CancelledError:
            ray.cancel(ref)
            raise
""", True),
    # 2 the same function reached from main(): driver code -> reported
    ("""
import asyncio, ray

def forward(ref):
    try:
        return ray.get(ref)
    except ValueError:
        ray.cancel(ref)
        raise

def main():
    forward(job.remote())
""", True),
    # 3 the only raise comes before the cancel
    ("""
import ray

def main(ref):
    if ref is None:
        raise ValueError("no ref")
    ray.cancel(ref)
    log("cancelled")
""", False),
    # 4 force given by a variable or a falsy non-False literal counts as forced
    ("""
import ray, sys

def stop(ref, force):
    ray.cancel(ref, force=force)
    ray.cancel(ref, force=0)
    sys.exit(1)
""", False),
    # 5 refs passed as **kw (libcst: keyword None) then exit: reported (the old condition missed it)
    ("""
import ray, sys

def stop(kw):
    ray.cancel(**kw)
    sys.exit(1)
""", True),
    # 6 return from an aliased KeyboardInterrupt handler of a plain method -> reported
    ("""
import ray
Interrupt = KeyboardInterrupt

class Job:
    def run(self):
        try:
            return ray.get(self.ref)
        except Interrupt:
            ray.cancel(self.ref)
            return None
""", True),
    # 7 cancel inside a lambda, exit after: the rule skips lambdas
    ("""
import ray, sys

def stop(refs):
    cb = lambda r: ray.cancel(r)
    cb(refs[0])
    sys.exit(1)
""", False),
    # 8 cancel in a class body then sys.exit (module-level code): kept, reported
    ("""
import ray, sys

class Boot:
    ray.cancel(ref)
    sys.exit(1)
""", True),
    # 9 a function made remote by ray.remote(work): raise after cancel -> reported
    ("""
import ray

def work(refs):
    try:
        ray.get(refs)
    except ValueError:
        for r in refs:
            ray.cancel(r)
        raise

task = ray.remote(work)
""", True),
    # 10 `force` spelled with a fullwidth letter: ast reads `force=True`, libcst (the rule) does
    # not see a force keyword -> reported, must stay a candidate
    ("""
import ray, sys

def stop(ref):
    ray.cancel(ref, \uff46orce=True)
    sys.exit(1)
""", True),
]

