"""SHD102 on tasks kept by subscript (``self._tasks[k] = asyncio.create_task(...)``,
``tasks[name] = loop.create_task(...)``): the holder is followed like one filled with
``.append``/``.add``. Putting or deleting an entry does not look at a task; every route that
reads one does (each VALID case below is a near miss of an INVALID one). Before session 6 the
holder in the store target itself counted as a use the rule did not model, so no store by
subscript was ever reported. With the tiers on, linting finds what it finds with them off."""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint.analyzer import lint_source
from shutdown_lint.prefilter import select
from shutdown_lint.settings import Settings

SETTINGS = Settings(selected=("SHD102",), target_version="py311")

_CLASS = """
import asyncio

async def on_done_reader(t):
    raise t.exception()

class Pool:
    def __init__(self):
        self._tasks = {{}}

    async def work(self, key):
        raise RuntimeError(key)

    def start(self, key):
        {store}

    async def stop(self, key):
        {use}
"""

_LOCAL = """
import asyncio

async def fetch(name):
    raise RuntimeError(name)

async def main(names):
    loop = asyncio.get_running_loop()
    tasks = {{}}
    for n in names:
        tasks[n] = loop.create_task(fetch(n))
    {use}
"""

STORE = "self._tasks[key] = asyncio.create_task(self.work(key))"
STORE_NAMED = "task = asyncio.create_task(self.work(key))\n        self._tasks[key] = task"
POP_WHEN_DONE = STORE_NAMED + "\n        task.add_done_callback(lambda _: self._tasks.pop(key, None))"


def pool(use: str, store: str = STORE) -> str:
    return _CLASS.format(store=store, use=use)


def local(use: str) -> str:
    return _LOCAL.format(use=use)


# (source, findings, what it shows)
CASES = [
    # --- not looked at: reported
    (pool("del self._tasks[key]"), 1, "an entry deleted"),
    (pool("for t in self._tasks.values():\n            t.cancel()"), 1, "values only cancelled"),
    (pool("self._tasks[key].cancel()"), 1, "an entry only cancelled"),
    (pool("if key in self._tasks:\n            print(len(self._tasks))"), 1, "membership and size"),
    (pool("self._tasks.pop(key, None)"), 1, "popped, the result dropped"),
    (pool("self._tasks[key] = None"), 1, "an entry replaced"),
    (pool("await asyncio.gather(*self._tasks.values(), return_exceptions=True)"), 1,
     "a discarded gather(return_exceptions=True)"),
    (pool("pass", store=STORE_NAMED), 1, "kept through a name, never read"),
    (pool("pass", store=POP_WHEN_DONE), 1, "popped by a done callback that drops it"),
    (local("print(len(tasks))"), 1, "a local dict only counted"),
    (local("del tasks[names[0]]"), 1, "a local dict's entry deleted"),
    # --- looked at: each observation route (near misses of the above)
    (pool("await asyncio.gather(*self._tasks.values())"), 0, "values gathered"),
    (pool("for k, t in self._tasks.items():\n            await t"), 0, "items iterated and awaited"),
    (pool("for t in self._tasks.values():\n            t.cancel()\n            await t"), 0,
     "cancelled and awaited on shutdown"),
    (pool("await asyncio.wait(self._tasks.values())"), 1, "waited on, the done set discarded"),
    (pool("done, _ = await asyncio.wait(self._tasks.values())\n        for t in done:\n            t.result()"), 0,
     "waited on, the done set asked for results"),
    (pool("await self._tasks[key]"), 0, "an entry awaited by key"),
    (pool("print(self._tasks[key].result())"), 0, "an entry's result read"),
    (pool("self._tasks[key].add_done_callback(on_done_reader)"), 0, "a done callback that reads the result"),
    (pool("t = self._tasks.pop(key)\n        t.cancel()\n        await t"), 0, "popped, cancelled and awaited"),
    (pool("await self._tasks.get(key)"), 0, "got and awaited"),
    (pool("registry.track(self._tasks)"), 0, "the holder handed to another call"),
    (pool("return self._tasks"), 0, "the holder returned"),
    (pool("pass", store=STORE_NAMED + "\n        await task"), 0, "the name awaited"),
    (pool("pass", store=POP_WHEN_DONE.replace("lambda _: self._tasks.pop(key, None)", "on_done_reader")), 0,
     "a done callback that reads the result, on the named task"),
    (local("await asyncio.gather(*tasks.values())"), 0, "a local dict gathered"),
    (local("return tasks"), 0, "a local dict returned"),
    (local("return [await tasks[n] for n in names]"), 0, "a local dict's entries awaited by key"),
    # --- not modelled: left alone (conservative)
    (pool("pass", store="self._tasks[key][0] = asyncio.create_task(self.work(key))"), 0,
     "nested subscript: the holder is no name nor attribute"),
    (pool("pass", store="other._tasks[key] = asyncio.create_task(self.work(key))"), 0,
     "another object's attribute: its users are elsewhere"),
    (pool("asyncio.get_running_loop().call_later(1, lambda: self._tasks.pop(key))"), 0,
     "popped by a lambda that is no done callback: its value may be used"),
]


def _lint(source: str) -> list[str]:
    result = lint_source(source.encode(), "t.py", SETTINGS)
    assert result.error is None, result.error
    return [d.message for d in result.diagnostics]


@pytest.mark.parametrize("source,findings,why", CASES, ids=[c[2] for c in CASES])
def test_subscript_holder(source, findings, why):
    source = textwrap.dedent(source)
    with select.disabled():
        without_tiers = _lint(source)
    assert len(without_tiers) == findings, (why, without_tiers)
    assert _lint(source) == without_tiers  # the tiers keep every file the rule reports in


def test_message_names_the_holder():
    [message] = _lint(pool("for t in self._tasks.values():\n            t.cancel()"))
    assert "task stored in `self._tasks` is never awaited or checked" in message
    [message] = _lint(pool("pass", store=POP_WHEN_DONE))
    assert "task kept in `self._tasks` whose done callback only discards it" in message


def test_pop_when_done_follows_flag_reference_only():
    """The dict form of the ``tasks.discard`` idiom obeys ``flag-reference-only`` like the set form."""
    off = Settings(selected=("SHD102",), target_version="py311",
                   rule_options={"SHD102": {"flag-reference-only": False}})
    result = lint_source(textwrap.dedent(pool("pass", store=POP_WHEN_DONE)).encode(), "t.py", off)
    assert result.diagnostics == []
