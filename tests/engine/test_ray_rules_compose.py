"""SHD403, SHD501 and SHD301 on the same Ray code: one finding per call, one cancel per path
(issue 26; the behaviour is run for real in tests/behaviour/test_shd403_shd501_fix_shapes.py)."""
from __future__ import annotations

import textwrap

from shutdown_lint.analyzer import lint_source
from shutdown_lint.fixer import fix_source
from shutdown_lint.settings import Settings

RAY_RULES = ("SHD301", "SHD403", "SHD501")

# audit 3.3: SkyRL's skyrl_train_main.py
COMPOSED = textwrap.dedent('''\
    import ray


    def main():
        task = skyrl_entrypoint.remote(cfg)
        try:
            ray.get(task)
        except KeyboardInterrupt:
            print("KeyboardInterrupt received, shutting down...")
            ray.cancel(task)
            raise


    if __name__ == "__main__":
        main()
''')

COROUTINE = textwrap.dedent('''\
    import asyncio
    import ray


    async def main():
        ray.init()
        ref = job.remote()
        return ray.get(ref)


    if __name__ == "__main__":
        asyncio.run(main())
''')


def _codes(src: str, selected) -> list:
    return [d.code for d in lint_source(src.encode(), "driver.py", Settings(selected=tuple(selected))).diagnostics]


def test_a_try_whose_interrupt_path_cancels_is_shd501s_and_the_fix_cancels_once():
    assert _codes(COMPOSED, RAY_RULES) == ["SHD501"]
    fixed = fix_source(COMPOSED.encode(), "driver.py", Settings(selected=RAY_RULES), unsafe=True).source.decode()
    assert "        ray.get(task)\n" in fixed
    assert "        runtime_guard.ray.cancel_and_wait(task, timeout=30)\n        raise\n" in fixed
    assert fixed.count("cancel") == 1


def test_the_drivers_ray_get_in_a_coroutine_is_reported_once():
    assert _codes(COROUTINE, RAY_RULES) == ["SHD403"]
    assert _codes(COROUTINE, ["SHD301"]) == ["SHD301"]  # alone, SHD301 still reports it
    fixed = fix_source(COROUTINE.encode(), "driver.py", Settings(selected=RAY_RULES), unsafe=True).source.decode()
    assert "    return await runtime_guard.ray.interruptible_get_async(ref)\n" in fixed
    compile(fixed, "driver.py", "exec")
    assert _codes(fixed, RAY_RULES) == []
