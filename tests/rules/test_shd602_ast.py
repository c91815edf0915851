"""SHD602 on ``ast`` (``_Ast``, issue 30 session 10) reports exactly what its libcst hooks report.

Every snippet is linted twice, gate on (``analyzer.AST_MODE``: the ``ast`` check) and off (the
libcst rule), once with the candidate tiers passing every file through (so the check also runs
where tier 2 would rule the rule out) and once as an ordinary run; the two ``FileResult``s must
be equal (position, message, fix presence, applicability and message; the edits are the libcst
path's alone), and the findings must be the expected ones: ``"<line><fix>"``, ``s`` a safe fix,
``u`` an unsafe one, ``-`` none. The snippets are the near misses where the two trees differ:
libcst's ``Name`` nodes that are no ``ast.Name`` (keyword arguments, parameters, definitions,
imports, ``except ... as``, match patterns, ``global``), statement lines joined by ``;``, blocks
on their header's line, ``try``/``try*`` (``finally`` has no node in ``ast``, ``except*``
handlers are ``ExceptHandler``s), ``elif`` chains, ``*a``/``**k`` arguments, parentheses libcst
gives a node (the code the rule reads and prints), code longer than the 50 characters a message
quotes, non-ASCII text before a finding (``ast`` counts UTF-8 bytes), CR and CRLF line ends; and
where the rule's decision flips (hand-over, stop on a cleanup path, work between the start and
the wait, sessions, timeouts, ``multiprocessing``, a child kept on ``self``, the fix's safety).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from shutdown_lint import analyzer
from shutdown_lint.analyzer import STAGE_AST, lint_source
from shutdown_lint.settings import Settings

from ast_both_ways import every_file_a_candidate

HEAD = "import asyncio, atexit, os, subprocess, sys\nimport multiprocessing as mp\nimport pytest\nfrom subprocess import PIPE, Popen\n"

CASES = {
    # --- where the child is kept
    "dropped-piped": ("""
        def f(cmd):
            subprocess.Popen(cmd, stdout=subprocess.PIPE)
            Popen(cmd)
            (Popen(cmd, stdin=PIPE))
        """, ['7-', '9-']),
    "dropped-piped-parenthesized-value": ("""
        def f(cmd):
            subprocess.Popen(cmd, stdout=(subprocess.PIPE))
            subprocess.Popen(cmd, stderr=subprocess.PIPE if cmd else None)
        """, []),
    "dropped-asyncio-awaited-and-not": ("""
        async def f(cmd):
            await asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
            asyncio.create_subprocess_exec(*cmd, stdout=asyncio.subprocess.PIPE)
        """, ['7-']),
    "two-targets": ("""
        def f(cmd):
            a = b = Popen(cmd, stdout=PIPE)
            work()
        """, []),
    "tuple-target": ("""
        def f(cmd):
            a, = [Popen(cmd, stdout=PIPE)]
            (b) = Popen(cmd, stdout=PIPE)
            work()
        """, ['8-']),
    "annotated": ("""
        def f(cmd):
            p: Popen = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7s']),
    "walrus": ("""
        def f(cmd):
            if (p := Popen(cmd, stdout=PIPE)):
                work()
            p.wait()
        """, []),
    "never-waited-piped": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
        """, ['7-']),
    "never-waited-no-pipe": ("""
        def f(cmd):
            p = Popen(cmd)
            work()
        """, []),
    "module-level": ("""
        p = Popen(["x"], stdout=PIPE)
        work()
        p.wait()
        """, ['6s']),
    "module-level-def-same-name": ("""
        p = Popen(["x"], stdout=PIPE)
        work()
        p.wait()
        def p():
            pass
        """, []),
    "other-object-attr-target": ("""
        class A:
            def start(self, other, cmd):
                other.proc = Popen(cmd, stdout=PIPE)
                self.items[0] = Popen(cmd, stdout=PIPE)
        """, []),
    "dropped-pipe-spelled-otherwise": ("""
        def f(cmd):
            subprocess.Popen(cmd, stdout=NOPIPE)
            subprocess.Popen(cmd, stdout=PIPE.x)
            subprocess.Popen(cmd, stdout=os.PIPE)
        """, ['9-']),
    # --- libcst Names that are no ast.Name
    "keyword-name-handoff": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            track(p=1)
            work()
            p.wait()
        """, []),
    "keyword-name-stop-word": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            reap(p=1)
            work()
        """, []),
    "keyword-name-observer": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            print(p=1)
            work()
            p.wait()
        """, ['7s']),
    "keyword-name-in-class-keyword": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            class C(metaclass=p):
                pass
            work()
            p.wait()
        """, []),
    "param-of-nested-def": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            def g(p):
                return 1
            work()
            p.wait()
        """, []),
    "param-of-lambda": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            key = lambda p: p
            work()
            p.wait()
        """, []),
    "own-param": ("""
        def f(p, cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7-']),
    "own-name": ("""
        def p(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7-']),
    "nested-def-named-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            def p():
                pass
        """, []),
    "nested-class-named-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            class p:
                pass
        """, ['7-']),
    "decorated-nested-def-named-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            @deco
            def p():
                pass
        """, []),
    "global-in-nested": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            def g():
                global p
            work()
            p.wait()
        """, []),
    "import-as-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            import x as p
        """, ['7s']),
    "import-dotted-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            import p.q
            from p.r import s
            from t import p
        """, ['7s']),
    "except-as-p": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            try:
                pass
            except OSError as p:
                pass
        """, ['7s']),
    "match-as-p": ("""
        def f(cmd, x):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            match x:
                case [1, *p]:
                    pass
                case {"a": 1, **p}:
                    pass
                case C(p=1) as p:
                    pass
        """, ['7s']),
    "attribute-p-nested": ("""
        def f(cmd, obj):
            p = Popen(cmd, stdout=PIPE)
            def g():
                return obj.p
            work()
            p.wait()
        """, ['7-']),
    # --- uses
    "fstring-use": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            log(f"{p.pid} {p.wait()}")
            work()
        """, []),
    "poll-loop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            while p.poll() is None:
                tick()
        """, ['7u']),
    "poll-lone": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            return p.poll()
        """, ['7-']),
    "poll-is-the-test": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            while p.poll():
                tick()
        """, ['7-']),
    "register-kill": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            atexit.register(p.kill)
            work()
        """, []),
    "register-star": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            call(*p.kill)
            work()
        """, []),
    "register-keyword": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            call(cb=p.terminate)
            work()
        """, []),
    "os-kill-pid": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            os.kill(p.pid, 9)
        """, ['7u']),
    "print-pid": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            print(p.pid)
            work()
        """, ['7-']),
    "star-arg-list": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            reap_all(*[p])
        """, ['7u']),
    "star-arg": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            track(*p)
        """, []),
    "dstar-dict": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            terminate(**{"a": p})
        """, ['7u']),
    "list-store": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            procs = [p]
            work()
        """, []),
    "tuple-target-use": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            [p, q] = g()
            work()
            p.wait()
        """, ['7s']),
    "return-yield-await": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            return p
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            yield p
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            yield from p
            p.wait()
        async def i(cmd):
            p = Popen(cmd, stdout=PIPE)
            await p
        """, ['13u']),
    "with-use-and-as": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            with p:
                work()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            with open(cmd) as p:
                work()
            p.wait()
        """, ['11s']),
    "del-aug-annot": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            del p
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            p += 1
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            x: p = 1
            work()
            p.wait()
        def i(cmd):
            p = Popen(cmd, stdout=PIPE)
            p: int
            work()
            p.wait()
        """, ['7s', '15s', '20s']),
    "subscript-lambda-walrus-base": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            d[p] = 1
            work()
            p.wait()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            cb = lambda: p
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            if (q := p):
                pass
        def i(cmd):
            p = Popen(cmd, stdout=PIPE)
            class C(p):
                pass
        """, ['7s']),
    "daemon-attr": ("""
        def f():
            w = mp.Process(target=g)
            w.daemon = True
            w.start()
            work()
            w.join()
        def g2():
            w = mp.Process(target=g)
            w.daemon: bool = True
            w.start()
            work()
            w.join()
        """, ['13-']),
    "stored-self": ("""
        class A:
            def start(self, cmd):
                p = Popen(cmd, stdout=PIPE)
                self.proc = p
            def other(self, cmd):
                p = Popen(cmd)
                self.child: Popen = p
        """, ['8-', '11-']),
    # --- protection
    "finally-stop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                work()
            finally:
                p.kill()
        """, []),
    "except-star-stop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                work()
            except* BaseException:
                p.kill()
                raise
            p.wait()
        def g(cmd):
            p = Popen(cmd, start_new_session=True)
            try:
                work()
            except* ValueError:
                p.kill()
                raise
            p.wait()
        """, ['15-']),
    "except-tuple-broad": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                work()
            except (ValueError, KeyboardInterrupt):
                p.kill()
                raise
            p.wait()
        """, []),
    "except-exception-session": ("""
        def f(cmd):
            p = Popen(cmd, process_group=0)
            try:
                work()
            except Exception:
                p.kill()
                raise
            p.wait()
        def g(cmd):
            p = Popen(cmd, preexec_fn=os.setsid)
            try:
                work()
            except Exception:
                p.kill()
            p.wait()
        def h(cmd):
            p = Popen(cmd, start_new_session=False, stdout=PIPE)
            try:
                work()
            except Exception:
                p.kill()
            p.wait()
        """, ['7-', '15-']),
    "except-type-holds-stop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                work()
            except p.wait():
                pass
        """, ['7u']),
    "kill-before-raise-same-line": ("""
        def f(cmd):
            p = Popen(cmd, start_new_session=True)
            if bad():
                p.kill(); raise RuntimeError()
            work()
            p.wait()
        def g(cmd):
            p = Popen(cmd, start_new_session=True)
            if bad():
                p.kill()
                raise RuntimeError()
            work()
            p.wait()
        def h(cmd):
            p = Popen(cmd, start_new_session=True)
            if bad():
                p.kill()
                pytest.fail("no")
            work()
            p.wait()
        """, ['7s', '13-', '20-']),
    "kill-before-raise-header-line": ("""
        def f(cmd):
            p = Popen(cmd, start_new_session=True)
            if bad(): p.kill()
            raise RuntimeError()
        """, ['7-']),
    "cancelled-error-asyncio": ("""
        async def f(cmd):
            p = await asyncio.create_subprocess_exec(*cmd)
            try:
                await work()
            except asyncio.CancelledError:
                p.kill()
                raise
            await p.wait()
        async def g(cmd):
            p = await asyncio.create_subprocess_exec(*cmd)
            try:
                await work()
            except (*errors,):
                p.kill()
                raise
            await p.wait()
        """, []),
    # --- the window between the start and the stop
    "wait-next": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            out, err = p.communicate()
        """, []),
    "harmless-between": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE, text=True)
            for line in p.stdout:
                log.info(line.rstrip())
            p.wait()
        """, []),
    "work-between": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7s']),
    "same-line-start-and-wait": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE); work(); p.wait()
        """, []),
    "same-line-work-then-wait": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work(); p.wait()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            p.wait(); work()
        """, ['7u', '10u']),
    "try-oserror-else": ("""
        def f(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            except OSError:
                return None
            else:
                out = p.communicate()
            return out
        def g(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            except OSError:
                return None
            else: work(); out = p.communicate()
            return out
        def h(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            except OSError:
                return None
            else:
                work()
                out = p.communicate()
            return out
        """, ['16-', '23-']),
    "try-star-else": ("""
        def f(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            except* OSError:
                pass
            else:
                out = p.communicate()
            return out
        """, ['8-']),
    "try-finally-window": ("""
        def f(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            finally:
                cleanup()
            p.wait()
        def g(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            finally:
                log("x")
            p.wait()
        """, ['8-']),
    "wait-in-if-test": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            if p.wait():
                work()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            if p.wait() != 0:
                work()
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            if wait:
                p.wait()
        """, ['7u']),
    "with-first": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            with lock:
                p.wait()
                work()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            with timer(p.wait()):
                work()
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            with lock: p.wait()
        def i(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                p.wait()
            finally:
                work()
        """, []),
    "elif-branches": ("""
        def f(cmd, a):
            if a:
                p = Popen(cmd, stdout=PIPE)
            elif b:
                work()
            else:
                pass
            p.wait()
        def g(cmd, a):
            if a:
                pass
            elif b:
                p = Popen(cmd, stdout=PIPE)
                work()
            p.wait()
        """, ['18-']),
    "loop-earlier-iteration": ("""
        def f(cmds):
            for c in cmds:
                if p:
                    p.wait()
                p = Popen(c, stdout=PIPE)
                work()
        def g(cmds):
            for c in cmds:
                p = Popen(c, stdout=PIPE)
                work()
                p.wait()
                p = Popen(c, stdout=PIPE)
                p.wait()
        """, ['10-', '14-']),
    "fixture-yield": ("""
        @pytest.fixture
        def server():
            p = Popen(["srv"], stdout=PIPE)
            yield 1
            p.kill()
        def plain():
            p = Popen(["srv"], stdout=PIPE)
            yield 1
            p.kill()
        """, ['12u']),
    "raise-between": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            if bad:
                raise ValueError()
            p.wait()
        """, ['7s']),
    "nested-def-between": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            @deco(work())
            def g():
                work()
            class C(Base(work())):
                x = work()
            p.wait()
        """, []),
    "header-line-start": ("""
        def f(cmd, a):
            if a: p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7-']),
    "match-case-start": ("""
        def f(cmd, a):
            match a:
                case 1:
                    p = Popen(cmd, stdout=PIPE)
                case _:
                    p = None
            work()
            p.wait()
        """, ['9-']),
    "except-body-start": ("""
        def f(cmd):
            try:
                pass
            except OSError:
                p = Popen(cmd, stdout=PIPE)
                log(1)
            p.wait()
        """, []),
    # --- sessions and timeouts
    "session-wait-only": ("""
        def f(cmd):
            p = Popen(cmd, start_new_session=True)
            p.wait()
        def g(cmd):
            p = Popen(cmd, start_new_session=True)
            p.terminate()
            p.wait()
        def h(cmd):
            p = Popen(cmd, start_new_session=True)
            while p.poll() is None:
                tick()
        """, ['10s']),
    "timed": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            out, _ = p.communicate(timeout=5)
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            p.wait(5)
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            p.wait(timeout=None)
        def i(cmd, kw):
            p = Popen(cmd, stdout=PIPE)
            p.wait(**kw)
        def j(cmd, kw):
            p = Popen(cmd, stdout=PIPE)
            p.communicate(**kw)
        def k(cmd, a):
            p = Popen(cmd, stdout=PIPE)
            p.wait(timeout=None, *a)
        """, ['7s', '10s', '16s']),
    "timeout-handled": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                p.communicate(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            try:
                p.communicate(timeout=5)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, subprocess.TimeoutExpired):
                pass
        """, ['13u']),
    "session-spellings": ("""
        def f(cmd):
            p = Popen(cmd, process_group=None)
            p.terminate()
        def g(cmd):
            p = Popen(cmd, preexec_fn=os.setpgrp)
            p.terminate()
        def h(cmd):
            p = Popen(cmd, start_new_session=None)
            p.terminate()
        def i(cmd):
            p = Popen(cmd, preexec_fn=setsid)
            p.terminate()
        def j(cmd):
            p = Popen(cmd, preexec_fn=os.getpid)
            p.terminate()
        """, ['10u', '16u']),
    "message-code-of-55-characters": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.communicate(input=b"0123456789012345678901234567890")
        """, ['7s']),
    # --- multiprocessing
    "mp-join-after-work": ("""
        def f():
            w = mp.Process(target=g)
            w.start()
            work()
            w.join()
        def g():
            w = mp.Process(target=g, daemon=False)
            w.start()
            work()
            w.join()
        def g2():
            w = mp.Process(target=g, daemon=None)
            w.start()
            work()
            w.join()
        def h():
            w = mp.Process(target=g, daemon=True)
            w.start()
            work()
            w.join()
        def i():
            w = mp.Process(target=g)
            work()
            w.join()
        """, ['7-', '12-', '17-']),
    "mp-context": ("""
        def f():
            ctx = mp.get_context("spawn")
            w = ctx.Process(target=g)
            w.start()
            work()
            w.join()
        def g(ctx: "mp.context.ForkContext"):
            w = ctx.Process(target=g)
            w.start()
            work()
            w.join()
        def h(obj):
            w = obj.Process(target=g)
            w.start()
            work()
            w.join()
        """, ['8-', '13-']),
    # --- a child kept on self
    "self-never-stopped": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
        """, ['8-']),
    "self-stopped-in-class": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
            def close(self):
                self.proc.kill()
        class B:
            def __init__(self, cmd):
                self.proc2 = Popen(cmd)
            def close(self):
                with self.proc2:
                    pass
        class C:
            def __init__(self, cmd):
                self.proc3 = Popen(cmd)
            def close(self):
                atexit.register(self.proc3.kill)
        class D:
            def __init__(self, cmd):
                self.proc4 = Popen(cmd)
            def close(self):
                while self.proc4.poll() is None:
                    pass
        class E:
            def __init__(self, cmd):
                self.proc5 = Popen(cmd)
            def close(self):
                while self.proc5.poll():
                    pass
        class F:
            def __init__(self, cmd):
                self.proc6 = Popen(cmd)
            def close(self):
                os.kill(self.proc6.pid, 9)
        class G:
            def __init__(self, cmd):
                self.proc7 = Popen(cmd)
            def close(self):
                print(self.proc7.pid)
                del self.proc7
        """, ['30-', '41-']),
    "self-other-class": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
        class B:
            def close(self):
                self.proc.kill()
        class C(A):
            def close(self):
                self.proc.kill()
        """, []),
    "self-subclass-dotted-base": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
        class C(mod.sub.A):
            def close(self):
                self.proc.kill()
        class D(*bases):
            def close(self):
                self.proc.kill()
        """, []),
    "self-other-object": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
        def stop(holder):
            holder.proc.terminate()
        """, []),
    "self-other-object-typed": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
        class B:
            proc = None
        def stop(holder: B):
            holder.proc.terminate()
        """, ['8-']),
    "self-nested-class": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
            def close(self):
                class Inner:
                    def f(self):
                        self.proc.kill()
        """, ['8-']),
    "self-session-mp-asyncio": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd, start_new_session=True)
                self.w = mp.Process(target=g)
            async def go(self, cmd):
                self.aproc = await asyncio.create_subprocess_exec(*cmd)
        """, ['11-']),
    "self-handed": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
                self.other = self.proc
        class B:
            def __init__(self, cmd):
                self.proc9 = Popen(cmd)
                register([self.proc9])
        class C:
            def __init__(self, cmd):
                self.proc10 = Popen(cmd)
                x, self.proc10 = 1, 2
        """, ['16-']),
    "self-not-in-method": ("""
        class A:
            proc = Popen(["x"])
        def f(self, cmd):
            self.proc = Popen(cmd)
        """, []),
    # --- the fix's plan
    "fix-safe-continue-in-loop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            while work():
                continue
            p.wait()
        def g(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            continue
            p.wait()
        def h(cmd):
            p = Popen(cmd, stdout=PIPE)
            def inner():
                return 1
            work()
            p.wait()
        def i(cmd):
            p = Popen(cmd, stdout=PIPE)
            work(lambda: (yield))
            p.wait()
        """, ['7s', '12u', '17-', '23s']),
    "fix-safe": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            rc = p.wait()
            print(rc)
        """, ['7s']),
    "fix-unsafe-return-before-wait": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            if work():
                return 1
            p.wait()
        """, ['7u']),
    "fix-unsafe-terminate": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.terminate()
        """, ['7u']),
    "fix-break-in-loop": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            for x in xs:
                if x:
                    break
                work()
            else:
                break
            p.wait()
        """, ['7s']),
    "fix-none-used-before": ("""
        def f(cmd):
            print(p)
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['8-']),
    "fix-none-rebound": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
            p = None
        """, ['7-']),
    "fix-none-global-in-window": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            if x:
                def g():
                    global q
            work()
            p.wait()
        """, ['7-']),
    "fix-none-shared-line": ("""
        def f(cmd):
            x = 1; p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['7-']),
    "fix-wait-shared-line": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait(); done()
        """, ['7u']),
    "fix-none-asyncio": ("""
        async def f(cmd):
            p = await asyncio.create_subprocess_exec(*cmd)
            await work()
            await p.wait()
        """, ['7-']),
    "fix-keyword-use-outside": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        def g():
            reap_it(p=1)
        """, ['7s']),
    # --- text: code in messages, non-ASCII, long code
    "message-long-code": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.communicate(input=b"a very long input that makes the code longer than fifty")
        """, ['7s']),
    "message-multiline-code": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p.communicate(
                input=b"x",
            )
        """, ['7s']),
    "non-ascii": ("""
        def f(cmd):
            s = "ßß"; p = Popen(cmd, stdout=PIPE)
            work("é")
            p.wait()
        """, ['7-']),
    "session-code-text": ("""
        def f(cmd, g):
            p = Popen(cmd, process_group=(g + 0))
            p.terminate()
        def h(cmd):
            p = Popen(cmd, preexec_fn=(os.setpgrp))
            p.terminate()
        """, ['7u']),
    # --- more near misses (from the mutation check)
    "declared-shared-before-start": ("""
        def f(cmd):
            nonlocal p
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        def g(cmd):
            global q
            q = Popen(cmd, stdout=PIPE)
            work()
            q.wait()
        """, []),
    "module-level-global-in-def": ("""
        p = Popen(["x"], stdout=PIPE)
        work()
        p.wait()
        def g():
            global p
        """, []),
    "import-dotted-before-start": ("""
        def f(cmd):
            import p.q
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        def g(cmd):
            from p.r import s
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['8-', '13-']),
    "match-names-before-start": ("""
        def f(cmd, x):
            match x:
                case {**p}:
                    pass
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        def g(cmd, x):
            match x:
                case C(p=1):
                    pass
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        def h(cmd, x):
            match x:
                case [*p]:
                    pass
            p = Popen(cmd, stdout=PIPE)
            work()
            p.wait()
        """, ['10-', '17-', '24-']),
    "rebound-to-other-call": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            p = wrap()
            p.wait()
        """, ['7-']),
    "while-loop-earlier-iteration": ("""
        def f(cmds):
            while cmds:
                if p:
                    p.wait()
                p = Popen(cmds.pop(), stdout=PIPE)
                work()
        """, ['10-']),
    "poll-in-if-test": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            if p.poll() is None:
                log("running")
        """, ['7-']),
    "stop-in-lambda": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            work()
            on_exit(lambda: p.kill())
        """, []),
    "starred-in-list": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            items = [*p]
            work()
            p.wait()
        """, []),
    "identity-attr-annotated-target": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            p.pid: int = 0
            work()
            p.wait()
        """, []),
    "self-lambda-and-cls": ("""
        class A:
            def __init__(self, cmd):
                self.proc = Popen(cmd)
                self.cb = lambda: self.proc
        class B:
            def __init__(self, cmd):
                self.child = Popen(cmd)
        class Other:
            @classmethod
            def stop(cls):
                cls.child.kill()
        """, ['12-']),
    "header-line-try-body": ("""
        def f(cmd):
            p = Popen(cmd, stdout=PIPE)
            try: p.wait()
            finally:
                work()
        """, ['7u']),
    "header-line-else-wait": ("""
        def f(cmd):
            try:
                p = Popen(cmd, stdout=PIPE)
            except OSError:
                return None
            else: out = p.communicate()
            return out
        """, ['8-']),
    "session-broad-handlers": ("""
        def f(cmd):
            p = Popen(cmd, start_new_session=True)
            try:
                work()
            except BaseException:
                p.kill()
                raise
            p.wait()
        def g(cmd):
            p = Popen(cmd, start_new_session=True)
            try:
                work()
            except:
                p.kill()
                raise
            p.wait()
        def h(cmd):
            p = Popen(cmd, start_new_session=True)
            try:
                work()
            except (*KeyboardInterrupt,):
                p.kill()
                raise
            p.wait()
        async def i(cmd):
            import concurrent.futures
            p = await asyncio.create_subprocess_exec(*cmd, start_new_session=True)
            try:
                await work()
            except concurrent.futures.CancelledError:
                p.kill()
                raise
            await p.wait()
        def j(cmd):
            import concurrent.futures
            p = Popen(cmd, start_new_session=True)
            try:
                work()
            except concurrent.futures.CancelledError:
                p.kill()
                raise
            p.wait()
        """, ['41-']),
    "raise-name-between": ("""
        def f(cmd, exc):
            p = Popen(cmd, stdout=PIPE)
            if exc:
                raise exc
            p.wait()
        """, ['7s']),
    "fix-other-wait": ("""
        def f(cmd, q):
            p = Popen(cmd, stdout=PIPE)
            work()
            q.wait()
            if q:
                return 1
            p.terminate()
        """, ['7u']),
}


def _rows(result) -> tuple:
    return (result.error, result.warnings,
            [{**d.to_dict(), "fix": d.to_dict()["fix"] and {**d.to_dict()["fix"], "edits": []}}
             for d in result.diagnostics])


def _found(result) -> list[str]:
    return [f"{d.line}{d.fix['applicability'][0] if d.fix else '-'}" for d in result.diagnostics]


def _both(code: str, monkeypatch, newline: str = "\n", target: str = "py312"):
    source = (HEAD + textwrap.dedent(code)).replace("\n", newline).encode()
    settings = Settings(selected=("SHD602",), target_version=target)
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source, "snippet.py", settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source, "snippet.py", settings, fix_edits=False)
    return on, off


@pytest.mark.parametrize("code,expected", list(CASES.values()), ids=list(CASES))
def test_ast_check_equals_the_libcst_rule(code, expected, monkeypatch):
    every_file_a_candidate(monkeypatch)
    on, off = _both(code, monkeypatch)
    assert on.stage == STAGE_AST
    assert _rows(on) == _rows(off)
    assert _found(on) == expected


@pytest.mark.parametrize("code,expected", list(CASES.values()), ids=list(CASES))
def test_equal_with_the_candidate_tiers(code, expected, monkeypatch):
    """The ordinary run: where the tiers admit the rule the check runs on ast, else neither runs
    (tier 2 is a superset of the rule's reports: every expected finding is still found)."""
    on, off = _both(code, monkeypatch)
    assert _rows(on) == _rows(off)
    assert _found(on) == expected
    if on.diagnostics:
        assert on.stage == STAGE_AST


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
@pytest.mark.parametrize("name", ["message-multiline-code", "same-line-work-then-wait", "try-oserror-else",
                                  "header-line-start", "kill-before-raise-same-line", "fix-wait-shared-line",
                                  "self-stopped-in-class"])
def test_other_line_ends(name, newline, monkeypatch):
    """``ast`` counts ``\\r`` and ``\\r\\n`` as line ends, as libcst does: the statement lines,
    header-line blocks and the code the messages quote are the same."""
    every_file_a_candidate(monkeypatch)
    code, expected = CASES[name]
    on, off = _both(code, monkeypatch, newline=newline)
    assert on.stage == STAGE_AST
    assert _rows(on) == _rows(off)
    assert _found(on) == expected


def test_the_cases_cover_both_answers(monkeypatch):
    """Not vacuous: the cases hold findings with a safe, an unsafe and no fix, and snippets with none."""
    every_file_a_candidate(monkeypatch)
    kinds, counts = set(), []
    for code, expected in CASES.values():
        counts.append(len(expected))
        kinds |= {e[-1] for e in expected}
    assert kinds == {"s", "u", "-"}
    assert counts.count(0) >= 25 and sum(1 for c in counts if c) >= 60


def _lint_project(root: Path, mode: str) -> subprocess.CompletedProcess:
    repo = Path(__file__).resolve().parents[2]
    return subprocess.run(
        [sys.executable, "-m", "shutdown_lint", "--isolated", "--no-cache", "--select", "SHD602",
         "--output-format", "concise", "--exit-zero", "."], cwd=root, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SHUTDOWN_LINT_AST": mode, "PYTHONPATH": str(repo), "PYTHONWARNINGS": "ignore"})


def test_project_index_both_ways(tmp_path):
    """A child kept on ``self`` that another module of the project stops (the index's search,
    ``_attr_released_elsewhere``, shared by both engines): real runs over the child_owners
    project with ``SHUTDOWN_LINT_AST=both`` report no difference and print what the libcst runs
    print, before and after the other modules' stops are taken out (two more findings)."""
    root = tmp_path / "child_owners"
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "projects" / "child_owners", root)
    outputs = []
    for edit in (False, True):
        if edit:
            services = root / "src" / "services"
            managed = services / "managed.py"
            managed.write_text(managed.read_text().replace("self.engine_proc.terminate()", "print(self.engine_proc.pid)")
                               .replace("self.engine_proc.wait(timeout=10)", "pass"))
            runner = services / "runner.py"
            runner.write_text(runner.read_text().replace("owned.worker.kill()", "print(owned.worker.pid)"))
        both, off = _lint_project(root, "both"), _lint_project(root, "off")
        assert both.returncode == 0 and off.returncode == 0, both.stderr + off.stderr
        assert "ast-engine difference" not in both.stderr
        assert both.stdout == off.stdout
        outputs.append(both.stdout.count("SHD602"))
    assert outputs == [7, 9]
