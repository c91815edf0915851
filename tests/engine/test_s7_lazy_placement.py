"""Where functions run (``contexts``, ``remote_bases``, ``main_task_only``) is computed on first use,
apart from the answers that need no other module (actor classes, callers, references): a rule that
asks only whether a class is a (threaded) actor no longer makes the facts search the project for
subclasses made actors elsewhere (``index.classes.made_remote``). The answers are those of the
eager computation."""

from __future__ import annotations

import libcst as cst
import pytest

from shutdown_lint.facts import ModuleFacts
from shutdown_lint.facts import execution as ex

CODE = '''
import asyncio, ray, threading, sys

@ray.remote(max_concurrency=4)
class Pool:
    def work(self):
        helper()

class Base:
    def run(self):
        ray.get(x)

@ray.remote
class Actor(Base):
    async def go(self):
        await inner()

def helper():
    sys.exit(1)

async def inner():
    pass

async def main():
    await inner()
    asyncio.create_task(inner())

def start():
    threading.Thread(target=helper).start()

if __name__ == "__main__":
    asyncio.run(main())
    ray.init()
'''


def _facts() -> ModuleFacts:
    return ModuleFacts.build(cst.parse_module(CODE))


def _answers(f: ModuleFacts) -> dict:
    fns = {fn.qualname: fn for fn in f.functions}
    classes = {c.qualname: c for c in f.classes}
    return {
        "contexts": {q: sorted(f.contexts(fn)) for q, fn in fns.items()},
        "main_only": {q: f.only_main_task(fn) for q, fn in fns.items()},
        "through": {q: f.remote_through_subclass(c) for q, c in classes.items()},
        "actor": {q: (f.is_ray_remote_class(c), f.is_threaded_ray_actor(c)) for q, c in classes.items()},
        "callers": {q: sorted(g.qualname for g in f.callers(fn)) for q, fn in fns.items()},
        "refs": {q: [k for _, k in f.references(fn)] for q, fn in fns.items()},
        "entry": {q: f.is_process_entrypoint(fn) for q, fn in fns.items()},
    }


def test_actor_questions_do_not_place():
    f = _facts()
    pool = next(c for c in f.classes if c.name == "Pool")
    assert f.is_threaded_ray_actor(pool) and f.is_ray_remote_class(pool)
    f.callers(f.functions[0])
    f.references(f.functions[0])
    placed = [n for n in ex._Execution._PLACED if n in f._execution.__dict__]
    assert placed == []


def test_same_answers_in_any_order():
    first = _answers(_facts())
    f = _facts()
    f.contexts(f.functions[0])  # placed first
    assert _answers(f) == first
    assert first["contexts"]["Base.run"] == ["ray-async-actor", "ray-remote", "ray-worker"]
    assert first["contexts"]["Pool.work"] == ["ray-remote", "ray-threaded-actor", "ray-worker"]
    assert first["contexts"]["helper"] == ["ray-worker", "thread"]
    assert first["contexts"]["main"] == ["driver", "main-coroutine"]
    assert first["through"]["Base"] == "`Actor` is a Ray actor"
    assert first["refs"]["inner"] == ["task", "await", "await"]
    assert first["main_only"]["main"] is True


def test_failed_placement_leaves_nothing_half_done(monkeypatch):
    f = _facts()
    execution = f._execution

    def boom(self):
        self.remote_bases = {}
        raise RuntimeError("index unreadable")

    monkeypatch.setattr(ex._Execution, "_inherit_remote", boom)
    with pytest.raises(RuntimeError):
        f.contexts(f.functions[0])
    assert not any(n in execution.__dict__ for n in ex._Execution._PLACED)
    monkeypatch.undo()
    assert _answers(f) == _answers(_facts())
