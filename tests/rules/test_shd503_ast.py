"""SHD503 on ``ast`` (``_Ast``, issue 30 session 9) reports exactly what its libcst hooks report.

Every snippet is linted twice, gate on (``analyzer.AST_MODE``: the ``ast`` check) and off (the
libcst rule), once with the candidate tiers passing every file through (so the check also runs
where tier 2 would rule the rule out) and once as an ordinary run, and the two ``FileResult``s
must be equal: the diagnostics field
by field (position, message, fix presence, applicability and message; the edits are the libcst
path's alone), the warnings and the error. The snippets are the near misses where the two trees
differ: ``try``/``try*`` (``finally`` has no node in ``ast``, ``except*`` handlers are
``ExceptHandler``s), nested defs, lambdas, comprehensions, class bodies, ``with`` items,
decorators, parentheses libcst gives a node (the code the rule compares), blocks on their
header's line, non-ASCII text before a finding (``ast`` counts UTF-8 bytes).
"""

from __future__ import annotations

import textwrap

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import every_file_a_candidate

HEAD = "import atexit, os, weakref\nimport runtime_guard\nfrom concurrent.futures import ThreadPoolExecutor, ProcessPoolExecutor\nimport concurrent.futures as cf\n"

STORED = {
    # --- try / try*: a release in a finally or an except body counts, in either kind of try
    "finally": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                finally:
                    self.pool.shutdown()
        """,
    "except-star-body": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                except* ValueError:
                    self.pool.shutdown()
        """,
    "try-star-finally": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                except* ValueError:
                    pass
                finally:
                    self.pool.shutdown()
        """,
    "try-star-else": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                except* ValueError:
                    pass
                else:
                    self.pool.shutdown()
        """,
    "except-type-not-body": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                except self.pool.shutdown():
                    pass
        """,
    # --- nested defs and lambdas
    "nested-def-in-method": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                def _inner():
                    try:
                        pass
                    finally:
                        self.pool.shutdown()
                return _inner
        """,
    "nested-twice": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                def outer():
                    def inner():
                        try:
                            pass
                        finally:
                            self.pool.shutdown()
        """,
    "lambda-in-finally": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                try:
                    pass
                finally:
                    go(lambda: self.pool.shutdown())
        """,
    "lambda-registered": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
                atexit.register(lambda: self.pool.shutdown())
        """,
    "helper-called-from-finally": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def _drop(self):
                self.pool.shutdown()
            def run(self):
                try:
                    work()
                finally:
                    self._drop()
        """,
    "helper-called-from-cleanup-name": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def _drop(self):
                self.pool.shutdown()
            def teardown(self):
                self._drop()
        """,
    "helper-called-normally": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def _drop(self):
                self.pool.shutdown()
            def run(self):
                self._drop()
        """,
    "callback": """
        import signal
        class A:
            def __init__(self, loop):
                self.pool = ThreadPoolExecutor()
                loop.add_signal_handler(signal.SIGTERM, self._drop)
            def _drop(self):
                self.pool.shutdown()
        """,
    # --- with items and parentheses: the code libcst compares
    "with-item-releases": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                with self.pool:
                    pass
        """,
    "with-item-parenthesized": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                with (self.pool):
                    pass
        """,
    "with-item-parenthesized-as": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                with (self.pool) as p:
                    pass
        """,
    "with-item-two-parentheses": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                with ((self.pool)):
                    pass
        """,
    "with-items-parenthesized": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def run(self):
                with (open("x"), self.pool):
                    pass
        """,
    "stop-on-parenthesized-ref": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                (self.pool).shutdown()
        """,
    "stop-on-spaced-ref": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                self . pool.shutdown()
        """,
    "taker-sole-arg-parenthesized": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor((self.pool))
        """,
    "taker-arg-comment": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor(  # why
                    self.pool,
                )
        """,
    "taker-sole-arg-parenthesized-multiline": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor(
                    (self.pool)
                )
        """,
    "taker-sole-arg-multiline": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor(
                    self.pool  # the pool
                )
        """,
    "taker-arg-trailing-comma-parens": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor((self.pool),)
        """,
    "taker-keyword": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor(executor=self.pool)
        """,
    "taker-star": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):
                runtime_guard.shutdown_executor(*self.pool)
        """,
    "set-default-executor": """
        import asyncio
        class A:
            def start(self):
                self.ex = ThreadPoolExecutor()
                asyncio.get_running_loop().set_default_executor(self.ex)
        """,
    "registered-stop-method": """
        class A:
            def start(self):
                self.ex = ThreadPoolExecutor()
                weakref.finalize(self, self.ex.shutdown)
        """,
    "registered-stop-method-spaced": """
        class A:
            def start(self):
                self.ex = ThreadPoolExecutor()
                weakref.finalize(self, self.ex . shutdown)
        """,
    # --- module level, class bodies, decorators
    "module-level-registered-in-if": """
        POOL = ThreadPoolExecutor()
        if True:
            atexit.register(POOL.shutdown)
        """,
    "module-level-in-function": """
        POOL = ThreadPoolExecutor()
        def main():
            try:
                run()
            finally:
                POOL.shutdown()
        """,
    "module-level-unreleased": """
        POOL: ThreadPoolExecutor = cf.ThreadPoolExecutor(max_workers=2)
        def go():
            POOL.submit(f)
        """,
    "module-level-decorator": """
        POOL = ThreadPoolExecutor()
        @atexit.register
        def _bye():
            POOL.shutdown(wait=False)
        """,
    "module-level-release-in-decorator": """
        POOL = ThreadPoolExecutor()
        @weakref.finalize(POOL.shutdown)
        def _bye():
            pass
        """,
    "class-body": """
        class A:
            POOL = ThreadPoolExecutor()
        """,
    "class-in-function": """
        def make():
            class A:
                POOL = ThreadPoolExecutor()
                def __init__(self):
                    self.pool = ThreadPoolExecutor()
            return A
        """,
    "release-in-class-in-if": """
        POOL = ThreadPoolExecutor()
        if True:
            class B:
                atexit.register(POOL.shutdown)
        """,
    "two-targets": """
        class A:
            def __init__(self):
                self.a = self.b = ThreadPoolExecutor()
        """,
    "annotated": """
        class A:
            def __init__(self):
                self.pool: ThreadPoolExecutor = ThreadPoolExecutor()
        """,
    "other-object": """
        class A:
            def __init__(self, other):
                other.pool = ThreadPoolExecutor()
        """,
    # --- the fix: which cleanup method, written how
    "fix-close-on-header-line": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self): self.log()
        """,
    "fix-close-after-continuation": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self): \\
                self.log()
        """,
    "fix-close-comment-backslash": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self):  # a comment \\
                self.log()
        """,
    "fix-del-and-stop": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def __del__(self):
                '''docstring only'''
            def stop(self):
                return None
        """,
    "fix-twice-defined": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            def close(self): pass
            def close(self):
                pass
        """,
    "fix-async-close": """
        class A:
            def __init__(self):
                self.pool = ThreadPoolExecutor()
            async def aclose(self):
                await self.flush()
        """,
    # --- non-ASCII text before the finding (ast's columns are UTF-8 bytes)
    "non-ascii-same-line": """
        class A:
            def __init__(self):
                self.n = "é✓"; self.pool = ThreadPoolExecutor()
        """,
    "non-ascii-lines-before": """
        # 日本語のコメント
        class A:
            \"\"\"Ünïcödé\"\"\"
            def __init__(self):
                self.pool = ThreadPoolExecutor(  # 𝔘𝔫𝔦
                    max_workers=4)
        """,
}

DRAINING = {
    "with-submit-loop": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "with-process-pool": """
        def f(xs):
            with cf.ProcessPoolExecutor() as ex:
                [ex.submit(g, x) for x in xs]
        """,
    "async-with": """
        async def f(xs):
            async with ThreadPoolExecutor(4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "with-on-header-line": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex: [ex.submit(g, x) for x in xs]
        """,
    "with-module-level": """
        with ThreadPoolExecutor(4) as ex:
            futures = {ex.submit(g, x): x for x in XS}
        """,
    "with-parenthesized-items": """
        def f(xs):
            with (ThreadPoolExecutor(4) as ex, open("f") as fh):
                while True:
                    ex.submit(g, fh)
        """,
    "with-second-item": """
        def f(xs):
            with open("f") as fh, cf . ThreadPoolExecutor(4) as ex:
                list(ex.submit(g, x) for x in xs)
        """,
    "with-parenthesized-factory": """
        def f(xs):
            with (ThreadPoolExecutor)(4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "with-multiline-factory": """
        def f(xs):
            with cf.ThreadPoolExecutor(  # é
                    max_workers=4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "with-multiprocessing-pool": """
        import multiprocessing
        def f(xs):
            with multiprocessing.Pool(4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "one-job-per-worker": """
        def f(n):
            with ThreadPoolExecutor(max_workers=n) as ex:
                for i in range(n):
                    ex.submit(g, i)
        """,
    "one-job-per-worker-positional": """
        def f(n):
            with ThreadPoolExecutor(n) as ex:
                [ex.submit(g, i) for i in range(n)]
        """,
    "one-job-per-worker-parenthesized": """
        def f(n):
            with ThreadPoolExecutor((n)) as ex:
                [ex.submit(g, i) for i in range(n)]
        """,
    "one-job-per-worker-spaced": """
        def f(n):
            with ThreadPoolExecutor(max_workers=n) as ex:
                for i in range( n ):
                    ex.submit(g, i)
        """,
    "one-job-per-worker-iter-parenthesized": """
        def f(n):
            with ThreadPoolExecutor(max_workers=n) as ex:
                for i in (range(n)):
                    ex.submit(g, i)
        """,
    "one-job-per-worker-multiline": """
        def f(n):
            with cf.ThreadPoolExecutor(max_workers=min(
                    32, n)) as ex:
                for i in range(min(
                    32, n)):
                    ex.submit(g, i)
        """,
    "one-job-per-worker-multiline-same-indent": """
        def f(n):
            with cf.ThreadPoolExecutor(max_workers=min(
                32, n)) as ex:
                for i in range(min(
                32, n)):
                    ex.submit(g, i)
        """,
    "one-job-per-worker-multiline-string": """
        def f(n):
            with cf.ThreadPoolExecutor(max_workers=len('''a
        b''')) as ex:
                for i in range(len('''a
        b''')):
                    ex.submit(g, i)
        """,
    "with-multiline-parenthesized-func": """
        def f(xs):
            with (cf  # the module
                    .ThreadPoolExecutor)(4) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "one-job-per-worker-len": """
        def f(xs):
            with ThreadPoolExecutor(max_workers=len(xs)) as ex:
                for i, x in enumerate(xs):
                    ex.submit(g, x)
                {k: ex.submit(g, v) for k, v in xs.items()}
        """,
    "one-job-per-worker-len-star": """
        def f(xs, *a):
            with ThreadPoolExecutor(*a, max_workers=len(xs)) as ex:
                for x in xs:
                    ex.submit(g, x)
        """,
    "one-job-per-worker-len-keyword-first": """
        def f(xs, kw):
            with ThreadPoolExecutor(**kw, max_workers=len(xs)) as ex:
                for x in xs.values():
                    ex.submit(g, x)
        """,
    "submit-in-lambda-or-nested-def": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                go = lambda: [ex.submit(g, x) for x in xs]
                def later():
                    for x in xs:
                        ex.submit(g, x)
                return go, later
        """,
    "submit-in-class-body": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                class Jobs:
                    futures = [ex.submit(g, x) for x in xs]
        """,
    "submit-in-loop-iter": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                for r in ex.submit(g, xs).result():
                    pass
        """,
    "map-dropped": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                ex.map(g, xs)
        """,
    "map-kept-not-consumed": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it = ex.map(g, xs)
            return it
        """,
    "map-kept-iterated": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it = ex.map(g, xs)
                for r in it:
                    print(r)
        """,
    "map-kept-star-arg": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it: object = ex.map(g, xs)
                print(*it)
        """,
    "map-kept-class-base": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it = ex.map(g, xs)
                class K(it):
                    pass
        """,
    "map-kept-keyword": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it = (ex.map(g, xs))
                done(results=it)
        """,
    "map-kept-comprehension": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                it = ex.map(g, xs)
                return [r for r in it]
        """,
    "map-in-nested-def": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                def later():
                    it = ex.map(g, xs)
                    return it
        """,
    # --- the interrupt paths that cancel
    "cancelled-in-handler": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                try:
                    [ex.submit(g, x) for x in xs]
                except (ValueError, KeyboardInterrupt):
                    ex.shutdown(wait=False, cancel_futures=True)
        """,
    "cancel-futures-false": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                ex.shutdown(cancel_futures=False)
        """,
    "cancel-futures-parenthesized-false": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                ex.shutdown(cancel_futures=(False))
        """,
    "cancel-in-finally": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                finally:
                    [x.cancel() for x in fs]
        """,
    "cancel-in-try-star-finally": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except* ValueError:
                    pass
                finally:
                    [x.cancel() for x in fs]
        """,
    "cancel-in-except-star-interrupt": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except* KeyboardInterrupt:
                    [x.cancel() for x in fs]
        """,
    "cancel-in-other-handler": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except ValueError:
                    [x.cancel() for x in fs]
        """,
    "cancel-in-handler-lambda": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except BaseException:
                    go(lambda: fs[0].cancel())
        """,
    "cancel-in-nested-def": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                finally:
                    def later():
                        fs[0].cancel()
        """,
    "exit-in-handler": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except:
                    (os._exit)(1)
        """,
    "exit-in-handler-spaced": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except builtins.KeyboardInterrupt:
                    os . _exit(1)
        """,
    "taker-cancels": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                try:
                    [ex.submit(g, x) for x in xs]
                finally:
                    runtime_guard.shutdown_executor((ex))
        """,
    "taker-in-decorator": """
        def f(xs):
            @atexit.register(ex)
            def g():
                pass
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
        """,
    "taker-in-f-string": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                print(f"{runtime_guard.shutdown_executor(ex)}")
        """,
    "taker-in-multiline-f-string": '''
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                print(f"""{x}
          {runtime_guard.shutdown_executor( (ex) )}""")
        ''',
    "exit-in-multiline-f-string": '''
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                fs = [ex.submit(g, x) for x in xs]
                try:
                    wait(fs)
                except KeyboardInterrupt:
                    print(f"""x
        {os._exit(1)}""")
        ''',
    # --- the drain fix: the name rebound in the block
    "rebound-assign": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                ex = None
        """,
    "rebound-del-tuple": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                del a, ex
        """,
    "rebound-attribute-target": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                self.ex = 1
        """,
    "rebound-subscript-keyword": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                d[h(ex=1)] = 2
        """,
    "rebound-import-as": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                import json as ex
        """,
    "not-rebound-import-from": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                from m import ex
        """,
    "not-rebound-comprehension": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                [1 for ex in xs]
        """,
    "rebound-except-star-as": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                try:
                    [ex.submit(g, x) for x in xs]
                except* ValueError as ex:
                    pass
        """,
    "rebound-walrus-in-nested-def": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                def h():
                    (ex := 3)
        """,
    "rebound-for-and-with": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                with open(f) as (a, ex):
                    pass
        """,
    "rebound-lambda-param-in-target": """
        def f(xs):
            with ThreadPoolExecutor(4) as ex:
                [ex.submit(g, x) for x in xs]
                d[lambda ex: 0] = 1
        """,
    # --- the local shape: ``ex.shutdown()`` with the default wait
    "local-shutdown": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            for x in xs:
                ex.submit(g, x)
            ex.shutdown()
        """,
    "local-shutdown-no-wait": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            for x in xs:
                ex.submit(g, x)
            ex.shutdown(False)
        """,
    "local-shutdown-wait-parenthesized": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            for x in xs:
                ex.submit(g, x)
            ex.shutdown(wait=(True))
        """,
    "local-shutdown-star": """
        def f(xs, a):
            ex = ThreadPoolExecutor(4)
            for x in xs:
                ex.submit(g, x)
            ex.shutdown(*a)
        """,
    "local-shutdown-keyword-then-star": """
        def f(xs, a):
            ex = ThreadPoolExecutor(4)
            for x in xs:
                ex.submit(g, x)
            ex.shutdown(wait=True, *a)
        """,
    "local-map-before-shutdown": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            for r in it:
                pass
            ex.shutdown()
        """,
    "local-map-after-shutdown": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            ex.shutdown()
            for r in it:
                pass
        """,
    "local-map-consumed-in-shutdown-line": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            ex.shutdown(); print(it)
        """,
    "local-map-consumed-around-shutdown": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            for r in it: ex.shutdown()
        """,
    "local-two-shutdowns": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            ex.shutdown()
            list(it)
            ex.shutdown()
        """,
    "local-nested-shutdown-calls": """
        def f(xs):
            ex = ThreadPoolExecutor(4)
            it = ex.map(g, xs)
            ex.shutdown(ex.shutdown(), list(it))
        """,
    "local-in-nested-def": """
        def f(xs):
            def inner():
                ex.shutdown()
            ex = ThreadPoolExecutor(4)
            [ex.submit(g, x) for x in xs]
        """,
    "local-cancel-in-decorator-default": """
        def f(xs, cb=lambda: fs.cancel()):
            ex = ThreadPoolExecutor(4)
            [ex.submit(g, x) for x in xs]
            ex.shutdown()
        """,
    "local-non-ascii": """
        def f(xs):
            s = "ß"; ex = ThreadPoolExecutor(4)
            [ex.submit(g, x) for x in xs]
            ex.shutdown()
        """,
}

CASES = {**{f"stored-{k}": v for k, v in STORED.items()}, **{f"draining-{k}": v for k, v in DRAINING.items()}}


_every_file_a_candidate = every_file_a_candidate


def _rows(result) -> tuple:
    return (result.error, result.warnings,
            [{**d.to_dict(), "fix": d.to_dict()["fix"] and {**d.to_dict()["fix"], "edits": []}}
             for d in result.diagnostics])


def _both(code: str, monkeypatch, target: str = "py312", newline: str = "\n"):
    source = (HEAD + textwrap.dedent(code)).replace("\n", newline).encode()
    settings = Settings(selected=("SHD503",), target_version=target)
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source, "snippet.py", settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source, "snippet.py", settings, fix_edits=False)
    return on, off


@pytest.mark.parametrize("code", list(CASES.values()), ids=list(CASES))
def test_ast_check_equals_the_libcst_rule(code, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, off = _both(code, monkeypatch)
    assert on.stage == STAGE_AST
    assert _rows(on) == _rows(off)


@pytest.mark.parametrize("code", list(CASES.values()), ids=list(CASES))
def test_equal_with_the_candidate_tiers(code, monkeypatch):
    """The ordinary run: where the tiers admit the rule the check runs on ast, else neither runs."""
    on, off = _both(code, monkeypatch)
    assert _rows(on) == _rows(off)
    if on.diagnostics:
        assert on.stage == STAGE_AST


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["stored-fix-close-comment-backslash", "stored-fix-close-after-continuation",
                                  "stored-taker-arg-comment", "draining-with-multiline-factory",
                                  "draining-local-map-consumed-in-shutdown-line"])
def test_other_line_ends(name, newline, monkeypatch):
    """``ast`` counts ``\\r`` and ``\\r\\n`` as line ends, as libcst does: the comments and the
    continuation lines the check reads are found on the same lines."""
    _every_file_a_candidate(monkeypatch)
    on, off = _both(CASES[name], monkeypatch, newline=newline)
    assert on.stage == STAGE_AST
    assert _rows(on) == _rows(off)


@pytest.mark.parametrize("name", ["with-submit-loop", "with-process-pool", "rebound-import-as"])
def test_no_drain_fix_below_py39_on_either_engine(name, monkeypatch):
    _every_file_a_candidate(monkeypatch)
    on, off = _both(DRAINING[name], monkeypatch, target="py38")
    assert on.stage == STAGE_AST and on.diagnostics
    assert _rows(on) == _rows(off)
    assert all(d.fix is None for d in on.diagnostics)


def test_the_cases_cover_both_answers(monkeypatch):
    """Not vacuous: the cases hold findings with and without a fix, and snippets with none."""
    _every_file_a_candidate(monkeypatch)
    fixes, counts = set(), []
    for code in CASES.values():
        on, _ = _both(code, monkeypatch)
        counts.append(len(on.diagnostics))
        fixes |= {d.fix is not None for d in on.diagnostics}
    assert fixes == {True, False}
    assert counts.count(0) >= 20 and sum(1 for c in counts if c) >= 40
