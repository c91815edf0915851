"""Tier-2 near misses of SHD301, SHD404, SHD503, SHD502, SHD202 (issue 30): each condition is a
necessary condition of its rule's reporting logic. For each pair, the file that stays a candidate
and the near miss that is now ruled out; linting agrees with the tiers on and off either way
(``_tier2_decides``), and a candidate that the rule reports is pinned as reported."""

from __future__ import annotations

import pytest

from tests.perf.test_candidates import _ACTOR, _tier2_decides  # the actor test_candidates' SHD404 cases fill in

# --------------------------------------------------------------------------- SHD301
# A type's method only blocks when the qualified name of its type can start with a module the file
# imports (``_roots``): ``asyncio.Event().wait()`` spells ``Event`` and ``wait``, but only an import
# of ``threading`` (or ``multiprocessing``, ``torch``) can make it ``threading.Event.wait``.
_EVENT = '''
import asyncio
IMPORT


class Batcher:
    def __init__(self):
        self.done = EVENT()

    async def drain(self):
        self.done.wait()
'''


@pytest.mark.parametrize("imports,event,candidate,reported", [
    ("import threading", "threading.Event", True, True),
    ("from threading import Event", "Event", True, True),
    ("import multiprocessing as mp", "mp.Event", True, True),
    ("import collections", "asyncio.Event", False, False),  # not awaited, but an asyncio.Event
    ("from asyncio import Event", "Event", False, False),
])
def test_shd301_a_typed_receiver_needs_an_import_of_its_module(imports, event, candidate, reported):
    code = _EVENT.replace("IMPORT", imports).replace("EVENT", event)
    assert bool(_tier2_decides("SHD301", code, candidate)) is reported


@pytest.mark.parametrize("source,candidate,reported", [
    # a bare name with no binding: the import that binds it is its qualified name
    ("from os import replace\nasync def f(a, b):\n    replace(a, b)\n", True, True),
    ("from dataclasses import replace\nasync def f(a):\n    return replace(a, x=1)\n", False, False),
    ("async def f(xs):\n    return list(map(str, xs))\n", False, False),  # builtins.map
    ("async def f(p):\n    return open(p)\n", True, True),  # builtins.open
    ("import os\nasync def f(p):\n    return os.replace(p, p)\n", True, True),
    # an alias through a binding still counts (``Tree.words`` gives more than the name)
    ("import os\nmv = os.replace\nasync def f(a, b):\n    mv(a, b)\n", True, True),
    # a factory's Future hidden from ``Tree.words`` by a conditional: the factory's word counts
    ("from concurrent.futures import ThreadPoolExecutor\n\nasync def main(x):\n"
     "    pool = ThreadPoolExecutor(2)\n    fut = pool.submit(print, 1) if x else None\n    fut.result()\n",
     True, True),
    # an asyncio future's result() never blocks: ``Future`` spelled from asyncio only
    ("import asyncio\nfrom asyncio import Future\n\nasync def main(fut: Future):\n    return fut.result()\n",
     False, False),
])
def test_shd301_names_resolve_through_their_imports(source, candidate, reported):
    assert bool(_tier2_decides("SHD301", source, candidate)) is reported


def test_shd301_string_annotation_without_import_stays_conservative():
    """``'typing.TextIO'`` with no import: the rule resolves nothing (no finding), and the tier,
    which resolves the annotation's names through the imports as the facts do, rules it out."""
    src = "async def f(fh: 'typing.TextIO', /):\n    return fh.read()\n"
    assert _tier2_decides("SHD301", src, False) == []
    assert _tier2_decides("SHD301", "import typing\n" + src, True) == ["SHD301"]


def test_shd301_markers_need_no_tokenizer_when_absent():
    from shutdown_lint.rules.shd301_blocking_call_in_coroutine import _async_markers

    assert _async_markers("async def f():\n    time.sleep(1)\n") == {}
    text = "async def f():\n    time.sleep(1)  # noqa: ASYNC251, async101\ns = '# noqa: ASYNC300'\n"
    assert _async_markers(text) == {2: {"ASYNC251", "ASYNC101"}}  # a string is no comment


# --------------------------------------------------------------------------- SHD404


@pytest.mark.parametrize("body,candidate", [
    # a finally that only releases a lock cleans nothing up (``_cleans_up`` skips lock-like calls)
    ("        await self.lock.acquire()\n        try:\n            return k\n        finally:\n"
     "            self.lock.release()\n", False),
    ("        try:\n            return k\n        finally:\n            release_lease(k)\n", True),
    ("        try:\n            return k\n        finally:\n            await self.flush()\n", True),
    # an async with on something named with no resource word, or lock-like
    ("        async with self._cond:\n            await self._cond.wait()\n", False),
    ("        async with lease_sandbox(k) as box:\n            await box.wait()\n", True),
    ("        async with self.sandbox_lock:\n            await wait_for(k)\n", False),
    # an except that cannot be a cancellation, or that cleans nothing up
    ("        try:\n            await wait_for(k)\n        except ValueError:\n            release(k)\n", False),
    ("        try:\n            await wait_for(k)\n        except asyncio.CancelledError:\n            log(k)\n", False),
    ("        try:\n            await wait_for(k)\n        except BaseException:\n            await release(k)\n"
     "            raise\n", True),
])
def test_shd404_tier2_follows_what_owns_a_resource(body, candidate):
    _tier2_decides("SHD404", _ACTOR.replace("BODY", body), candidate)


# --------------------------------------------------------------------------- SHD503
_WITH = '''
from concurrent.futures import ThreadPoolExecutor


def run(jobs, n):
    with ThreadPoolExecutor(FACTORY_ARGS) as ex:
BODY
'''


@pytest.mark.parametrize("factory_args,body,candidate,reported", [
    # a map whose iterator the block consumes: the rule's interrupt path cancels what is left
    ("", "        return list(ex.map(work, jobs))\n", False, False),
    ("", "        for r in ex.map(work, jobs):\n            print(r)\n", False, False),
    ("", "        it = ex.map(work, jobs)\n        print(sorted(it))\n", False, False),
    # ... kept and never consumed in the block, or dropped: queued in bulk
    ("", "        it = ex.map(work, jobs)\n    return it\n", True, True),
    ("", "        ex.map(work, jobs)\n", True, True),
    # one submit per worker of `range(W)`, W the pool's max_workers: nothing waits in the queue
    ("max_workers=n", "        fs = [ex.submit(work, i) for i in range(n)]\n", False, False),
    # the rule compares code as written (`range( n )` is reported); `max_workers = n` and a positional
    # count are not, but stay candidates: the tier decides on the exact text `range(W)` only
    ("max_workers=n", "        fs = [ex.submit(work, i) for i in range( n )]\n", True, True),
    ("max_workers = n", "        fs = [ex.submit(work, i) for i in range(n)]\n", True, False),
    ("n", "        fs = [ex.submit(work, i) for i in range(n)]\n", True, False),
    ("max_workers=n", "        fs = [ex.submit(work, j) for j in jobs]\n", True, True),
    # a submit in a nested def is not the block's (``_calls_on`` does not enter it)
    ("", "        def later():\n            return [ex.submit(work, j) for j in jobs]\n        return later\n",
     False, False),
])
def test_shd503_tier2_reads_the_work_a_with_block_queues(factory_args, body, candidate, reported):
    code = _WITH.replace("FACTORY_ARGS", factory_args).replace("BODY", body)
    assert bool(_tier2_decides("SHD503", code, candidate)) is reported


_STORED = '''
from concurrent.futures import ThreadPoolExecutor


class Agent:
    def __init__(self):
        self.pool = ThreadPoolExecutor(2)

    async def run(self):
        try:
            await serve()
        finally:
            RELEASE
'''


@pytest.mark.parametrize("release,candidate", [
    ("self.pool.shutdown()", False),  # a finally of any method: ``_released`` finds it
    ("self . pool.shutdown()", True),  # the rule compares the code as written
    ("cb = lambda: self.pool.shutdown()", True),  # in a lambda: not in the finally's own function
    ("self.other.shutdown()", True),
])
def test_shd503_tier2_release_in_a_finally(release, candidate):
    _tier2_decides("SHD503", _STORED.replace("RELEASE", release), candidate)


# --------------------------------------------------------------------------- SHD202
_TAIL = '''
def serve():
    try:
        run()
    except KeyboardInterrupt:
BODY
'''


@pytest.mark.parametrize("source,candidate", [
    # path 4 (``process_tail``): a handler that does something, in a top-level function
    (_TAIL.replace("BODY", "        log('stopped')\n"), True),
    # ... but only ``pass``/``...``: ``_does_something`` is False, the rule returns
    (_TAIL.replace("BODY", "        pass\n"), False),
    (_TAIL.replace("BODY", "        ...\n        pass\n"), False),
    (_TAIL.replace("BODY", "        'a string statement'\n"), True),  # left to the rule
    # ... in a def nested in a def: ``process_tail`` answers None for it
    ("def outer():\n    def serve():\n        try:\n            run()\n        except KeyboardInterrupt:\n"
     "            log('stopped')\n    return serve\n", False),
    # ... a method of a top-level class stays; of a class nested in a class does not
    ("class A:\n    def serve(self):\n        try:\n            run()\n        except KeyboardInterrupt:\n"
     "            log('stopped')\n", True),
    ("class A:\n    class B:\n        def serve(self):\n            try:\n                run()\n"
     "            except KeyboardInterrupt:\n                log('stopped')\n", False),
    # path 3 needs no ``_does_something``: a __main__ block's handler that passes is reported
    ("import sys\nif __name__ == '__main__':\n    try:\n        run()\n    except KeyboardInterrupt:\n        pass\n",
     True),
])
def test_shd202_tier2_process_tail_needs_a_tail_that_does_something(source, candidate):
    _tier2_decides("SHD202", source, candidate)


# --------------------------------------------------------------------------- SHD501
_HANDLER_CANCEL = '''
import ray


def NAME(refs):
    try:
        ray.get(refs)
    except KeyboardInterrupt:
        ray.cancel(refs[0])
        log("cancelled")
    AFTER
'''


@pytest.mark.parametrize("name,after,guard,candidate", [
    # a cancel in a handler of a helper that carries on: no exit, raise or return after it
    ("stop", "log('done')", "", False),
    # ... the end of an entry function (``main``, or called from the __main__ block) is the driver's
    ("main", "log('done')", "", True),
    ("stop", "log('done')", "\nif __name__ == '__main__':\n    stop([])\n", True),
    # ... a raise after it (in an interrupt handler it ends the process)
    ("stop", "raise SystemExit(1)", "", True),
])
def test_shd501_tier2_a_handler_cancel_needs_an_exit_or_an_entry(name, after, guard, candidate):
    code = _HANDLER_CANCEL.replace("NAME", name).replace("AFTER", after) + guard
    _tier2_decides("SHD501", code, candidate)


_LOCAL = '''
from concurrent.futures import ThreadPoolExecutor


def run(jobs):
    ex = ThreadPoolExecutor(4)
    fs = [ex.submit(work, j) for j in jobs]
SHUTDOWN
'''


@pytest.mark.parametrize("shutdown,candidate,reported", [
    ("    ex.shutdown()\n    return fs\n", True, True),
    # ``_check_local`` reads the function's own body: a shutdown in a nested def is not one
    ("    def wait():\n        ex.shutdown()\n    return wait\n", False, False),
    ("    done = lambda: ex.shutdown()\n    return done\n", False, False),
])
def test_shd503_tier2_local_shutdown_in_the_function_itself(shutdown, candidate, reported):
    assert bool(_tier2_decides("SHD503", _LOCAL.replace("SHUTDOWN", shutdown), candidate)) is reported


_FACTORY_ACTOR = '''
import ray
IMPORT

def make(env_cls):
    @ray.remote
    class Wrapper(BASE):
        def spaces(self):
            return self.observation_space
    return Wrapper
'''


@pytest.mark.parametrize("imports,base,candidate", [
    # a base spelled from a parameter: the facts name no class, ``_check_inherited`` finds no owner
    ("", "env_cls", False),
    # an imported base: the project index may resolve it (and its async methods)
    ("from .envs import Base", "Base", True),
    ("import envs", "envs.Base", True),
    ("", "object", True),  # a builtin has a qualified name too: left to the rule
])
def test_shd404_tier2_an_inherited_owner_needs_a_base_the_facts_can_name(imports, base, candidate):
    _tier2_decides("SHD404", _FACTORY_ACTOR.replace("IMPORT", imports).replace("BASE", base), candidate)


@pytest.mark.parametrize("handler,candidate", [
    # a ``return`` of a value gives the process that status (``sys.exit(main())``): only a None
    # return or a fall-through leaves normally
    ("        return 1\n", False),
    ("        if p:\n            return p.wait()\n        else:\n            raise\n", False),
    ("        if p:\n            return p.wait()\n        elif q:\n            raise\n        else:\n            return 2\n",
     False),
    ("        if p:\n            return p.wait()\n        log('x')\n", True),  # may fall through
    ("        if p:\n            return p.wait()\n", True),  # no else: may fall through
    ("        log('x')\n        return None\n", True),
    ("        log('x')\n        return\n", True),
])
def test_shd202_tier2_a_handler_leaves_by_a_none_return_or_a_fall_through(handler, candidate):
    code = "import sys\n\ndef main(p, q):\n    try:\n        run()\n    except KeyboardInterrupt:\n" + handler \
        + "\n\nif __name__ == '__main__':\n    main(1, 2)\n"
    _tier2_decides("SHD202", code, candidate)
