from __future__ import annotations

import ast
import io
import re
import shlex
import tokenize
from typing import Optional

from shutdown_lint.lazy_libcst import libcst as cst

from shutdown_lint.ast_engine import AstCheck
from shutdown_lint.ast_engine.execution import arguments
from shutdown_lint.ast_engine.facts import first_argument
from shutdown_lint.prefilter.words import Word
from shutdown_lint.rule import Invalid, Rule
from shutdown_lint.prefilter.ast_tree import COMPREHENSIONS, DEFS, nested_statements, positional_args
from shutdown_lint.prefilter.ast_tree import walk as ast_walk
from shutdown_lint.traversal import walk

from .shd402_asyncio_run_without_sigterm import _IDENTIFIER_FIELDS, _IDENTIFIER_LISTS

#: Calls that run a command: the command is the first positional argument or ``args=``.
COMMAND_CALLS = frozenset({
    "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "subprocess.Popen", "subprocess.getoutput", "subprocess.getstatusoutput",
    "os.system", "os.popen", "asyncio.create_subprocess_shell", "asyncio.create_subprocess_exec",
})
_BY_NAME = frozenset({"pkill", "killall"})
#: pkill options that select by parent, process group or session: those end the caller's own tree.
_TARGETED = re.compile(r"^(-P|--parent|-g|--pgroup|-s|--session)(=|$)|^-[A-Za-z]*[Pgs]$")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
_SEPARATORS = re.compile(r"[;&|()`\n]+|\$\(")
_KILL_METHODS = frozenset({"kill", "terminate", "send_signal"})
_NAME_ACCESSORS = frozenset({"name", "cmdline", "exe"})
_OWN_TREE_WORDS = frozenset({"ppid", "getpid"})


class _Decide:
    """What SHD601 decides, on either tree (``KillByName``: libcst; ``_Ast``: ``ast``): which
    calls run a command or iterate processes, the command's words and whether they kill by
    name. The tree answers ``_command`` (the command argument), ``_elements`` (a list or
    tuple's element values), ``_split_argument`` (``shlex.split``'s first argument),
    ``_literal`` (a string's text as libcst reads it) and ``_check_process_iter``."""

    def visit_Call(self, node) -> None:
        name = self.facts.call_name(node)
        if name in COMMAND_CALLS:
            self._check_command(node)
        elif name is not None and name.endswith("psutil.process_iter"):
            self._check_process_iter(node)

    def _check_command(self, node) -> None:
        cmd = self._command(node)
        if cmd is None:
            return
        words = self._command_words(cmd)
        if words is None:
            return
        found = _kill_by_name(words)
        if found is None:
            return
        tool, sigkill = found
        severity = " with SIGKILL," if sigkill else ","
        self.report(
            node,
            f"`{tool}` ends every process whose name or command line matches{severity} other users' and other "
            f"runs' processes on the node included, with no chance to clean up: keep the `Popen` objects you "
            f"start (`start_new_session=True`) and end their process groups "
            f"(`runtime_guard.terminate_process_groups`)",
        )

    def _command_words(self, expr) -> Optional[list[str]]:
        """The command as shell words, or None when it is not written out."""
        elements = self._elements(expr)
        if elements is not None:
            words = []
            for value in elements:
                text = self._literal(value)
                words.append(text if text is not None else "{}")
            if len(words) >= 3 and words[0].rsplit("/", 1)[-1] in _SHELLS and words[1] in ("-c", "-lc"):
                return _shell_words(words[2])
            return words
        inner = self._split_argument(expr)
        if inner is not None:
            return self._command_words(inner)
        text = self._literal(expr)
        return _shell_words(text) if text is not None else None


def _kill_message(sigkill: bool) -> str:
    return ("process killed on a name or command-line match from `psutil.process_iter()`"
            + (" with SIGKILL" if sigkill else "")
            + ": other users' and other runs' processes match too and get no chance to clean up; "
              "keep the `Popen` objects you start and end their process groups "
              "(`runtime_guard.terminate_process_groups`)")


# ------------------------------------------------------------------ detection on ast
class _Ast(_Decide, AstCheck):
    """SHD601 on ``ast`` (``ast_engine``): the same decisions (``_Decide``); the tree's answers
    read from ``ast``: libcst's argument order (``*a``/``**k`` positional, ``f(k=1, *a)``), a
    string's text where ``ast`` merges implicit concatenations into one node (an f-string piece:
    libcst keeps its text raw, read back through libcst from the node's source), the wrappers
    of a ``process_iter()`` call (libcst's ``Arg``: a positional, starred or keyword argument;
    ``CompFor``: the first ``for`` of a comprehension), ``if`` tests over the loop's body but
    nested defs, and libcst's ``Name`` and ``SimpleString`` nodes (``_ast_mentions``)."""

    @staticmethod
    def _command(node: ast.Call) -> Optional[ast.AST]:
        args = arguments(node)
        cmd = next((a.value for a in args if a.keyword is None), None)
        if cmd is None:
            cmd = next((a.value for a in args if a.keyword == "args"), None)
        return cmd

    @staticmethod
    def _elements(expr: ast.AST) -> Optional[list]:
        if type(expr) in (ast.List, ast.Tuple):
            return [el.value if type(el) is ast.Starred else el for el in expr.elts]
        return None

    def _split_argument(self, expr: ast.AST) -> Optional[ast.AST]:
        if type(expr) is ast.Call and self.facts.call_name(expr) == "shlex.split":
            return first_argument(expr)  # None without arguments
        return None

    def _literal(self, expr: ast.AST) -> Optional[str]:
        t = type(expr)
        if t is ast.Constant:
            # the pieces of ``"a" "b"`` evaluated and joined, as libcst's ``ConcatenatedString``
            return expr.value if type(expr.value) is str else None
        if t is ast.JoinedStr:
            # libcst keeps an f-string piece's text raw (escapes, ``{{``): read it with libcst
            try:
                parsed = cst.parse_expression("(" + self.facts.segment(expr) + ")")
            except Exception:
                return None
            return _literal(parsed)
        return None

    # ------------------------------------------------------------------ psutil (ast)
    def _check_process_iter(self, node: ast.Call) -> None:
        f = self.facts
        parent = f.parent(node)
        t = type(parent)
        # (libcst's ``outer.iter is ...`` tests: an expression under a ``for`` is its iterator,
        # as a call is never a target)
        wrapper = None  # what libcst's ``Arg`` holding the call hangs under
        if t is ast.Starred or t is ast.keyword:
            # ``f(*process_iter())``, ``f(k=process_iter())``; in a list or a class's bases the
            # holder is no call, so nothing follows (libcst: a StarredElement or a ClassDef's Arg)
            wrapper = f.parent(parent)
        elif t is ast.Call and parent.func is not node:
            wrapper = parent
        if wrapper is not None:  # for p in list(psutil.process_iter()) / sorted(...)
            outer = f.parent(wrapper) if type(wrapper) is ast.Call else None
            if type(outer) in _AST_FORS and not self._mentions(outer.body, _OWN_TREE_WORDS):
                self._report_kills(outer.body, require_match=True)
            return
        if t is ast.comprehension and parent.iter is node:  # [p for p in process_iter() if <name match>]
            holder = f.parent(parent)
            if holder is None or holder.generators[0] is not parent:
                return  # libcst's CompFor of a later ``for`` hangs under the previous one
            outer = f.parent(holder)
            if type(outer) in _AST_FORS and any(
                    self._mentions([cond], _NAME_ACCESSORS) for cond in parent.ifs):
                self._report_kills(outer.body, require_match=False)
            return
        if t in _AST_FORS:
            if not self._mentions(parent.body, _OWN_TREE_WORDS):
                self._report_kills(parent.body, require_match=True)

    def _report_kills(self, body: list, *, require_match: bool) -> None:
        """The kill calls under ``body`` (not in a nested def), each under the ``if`` tests
        around it (an ``elif``'s and an ``else``'s included, as libcst's ``If`` holds them)."""
        todo: list = [(s, False) for s in reversed(body)]
        matched: list[bool] = [False]  # stack: some ``if`` test around names a process's name
        while todo:
            node, leaving = todo.pop()
            if leaving:
                matched.pop()
                continue
            t = type(node)
            if t in _AST_DEFS:
                continue
            if t is ast.If:
                matched.append(matched[-1] or self._mentions([node.test], _NAME_ACCESSORS))
                todo.append((node, True))
            elif t is ast.Call and self._is_kill(node) and (not require_match or matched[-1]):
                self.report(node, _kill_message(self._is_sigkill(node)))
            todo.extend((c, False) for c in reversed(list(ast.iter_child_nodes(node))))

    def _is_kill(self, call: ast.Call) -> bool:
        if self.facts.call_name(call) in ("os.kill", "os.killpg"):
            return True
        return type(call.func) is ast.Attribute and call.func.attr in _KILL_METHODS

    def _is_sigkill(self, call: ast.Call) -> bool:
        func = call.func
        if type(func) is ast.Attribute and func.attr == "kill" and self.facts.call_name(call) != "os.kill":
            return True
        # libcst's ``Integer`` ``9``: the text ``9`` (``0x9``, ``9.0`` are not)
        return any("SIGKILL" in self.facts.segment(a.value) or self.facts.segment(a.value) == "9"
                   for a in arguments(call))

    def _mentions(self, nodes: list, words: frozenset[str]) -> bool:
        """libcst's ``_mentions``: an identifier libcst holds in a ``Name`` equal to one of
        ``words``, or a ``SimpleString`` (one piece of an implicit concatenation) whose source,
        quotes stripped, is one: read from the string tokens of a string node's source (an
        f-string's text and format spec are no ``STRING`` token, or one with its ``f`` prefix,
        which, as any prefix, never strips to a word; bytes have their ``b``)."""
        for root in nodes:
            for n in ast_walk(root):
                t = type(n)
                if t is ast.Constant:
                    if type(n.value) is str and self._spells_piece(n, words):
                        return True
                elif t is ast.JoinedStr:
                    if self._spells_piece(n, words):
                        return True
                elif _identifier_in(n, t, words):
                    return True
        return False

    def _spells_piece(self, node: ast.AST, words: frozenset[str]) -> bool:
        """One of libcst's ``SimpleString`` pieces of ``node``'s source (its string tokens),
        quotes stripped, is one of ``words``."""
        text = self.facts.segment(node)
        if not any(w in text for w in words):
            return False
        source = "(" + text.replace("\r\n", "\n").replace("\r", "\n") + ")"
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
        except (tokenize.TokenError, SyntaxError):
            return False
        for tok in tokens:
            if tok.type == tokenize.STRING and tok.string.strip("'\"") in words:
                return True
        return False


def _identifier_in(n: ast.AST, t: type, words: frozenset[str]) -> bool:
    """An identifier of ``n`` that libcst holds in a ``Name`` is one of ``words`` (a dotted
    import name: each part is a ``Name``)."""
    fields = _IDENTIFIER_FIELDS.get(t)
    if fields is not None:
        for field in fields:
            ident = getattr(n, field)
            if ident and (ident in words or (t in _DOTTED and any(part in words for part in ident.split(".")))):
                return True
    listed = _IDENTIFIER_LISTS.get(t)
    return listed is not None and any(ident in words for ident in getattr(n, listed))


_AST_FORS = (ast.For, ast.AsyncFor)
_AST_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_DOTTED = (ast.alias, ast.ImportFrom)


class KillByName(_Decide, Rule):
    """
    ## What it does
    Flags code that ends processes chosen by name or command-line pattern:
    - `pkill` / `killall` (and `kill $(pgrep ...)`, `pgrep ... | xargs kill`) run through
      `subprocess.run/call/check_call/check_output/Popen`, `os.system`, `os.popen` or
      `asyncio.create_subprocess_*`, as an argument list (`["pkill", "-f", "vllm"]`, also
      behind `sudo` or `bash -c`) or a shell string, f-strings included;
    - a loop over `psutil.process_iter()` that calls `.kill()`, `.terminate()`,
      `.send_signal()` or `os.kill()` under a condition on the process's `name()`,
      `cmdline()`, `exe()` or `info["name"]`/`info["cmdline"]`.

    Not flagged: `pkill -P <pid>` / `-g` / `-s` (by parent, process group or session: the
    caller's own tree), a `process_iter()` loop whose condition also looks at the parent
    (`ppid()`, `os.getpid()`), loops that only read or report processes, and kills by a
    PID the program recorded.

    ## Why is this bad?
    A name or pattern matches every process on the machine that has it: on a shared node
    that is other users' inference servers, the next run's `torchrun`, a colleague's
    debugging session; `pkill -f vllm` also matches any shell or editor whose command line
    mentions vllm. They are ended without warning, often with SIGKILL, so none of them
    gets to checkpoint, release a GPU lease or close a sandbox. And it still misses your
    own children that renamed themselves (`setproctitle`: `ray::IDLE`, `VLLM::EngineCore`).

    ## Example
    ```python
    import subprocess

    def cleanup():
        subprocess.run(["pkill", "-9", "-f", "vllm.entrypoints"])
    ```

    ## Use instead
    Keep the `Popen` objects (or PIDs) you start, start each child in its own session so it
    leads a process group with its descendants, and end exactly those groups: SIGTERM, a
    grace period, then SIGKILL. `runtime_guard.terminate_process_groups` does that:

    ```python
    import subprocess
    import runtime_guard

    servers = [subprocess.Popen(cmd, start_new_session=True) for cmd in commands]
    ...
    def cleanup():
        runtime_guard.terminate_process_groups(servers, grace=10)
    ```

    ## Fix safety
    No autofix: which processes are "yours" is not in the code that kills by name; the
    remedy needs the `Popen` objects or PIDs kept where the processes are started.

    ## Known limits
    - Commands assembled at run time (`cmd = base + [name]`, a variable holding the
      string) and kills in a function the `process_iter()` loop calls are not seen.
    - A list comprehension that filters `process_iter()` by name and is killed later in
      another statement is not followed.
    - A `process_iter()` loop filtered both by name and by user (`username()`) is still
      flagged: other runs of the same user are hit.

    ## References
    - procps `pkill(1)`: `-f` matches against the full command line; `-P`, `-g`, `-s`
    - Python docs: `subprocess.Popen(start_new_session=True)`, `os.killpg`
    - psutil docs: `process_iter`, `Process.children(recursive=True)`, `wait_procs`
    """

    code = "SHD601"
    name = "kill-by-name"
    summary = "Processes killed by name or pattern (`pkill`, `killall`, `psutil.process_iter`): hits other runs"
    triggers = ("pkill", "killall", "pgrep", "process_iter")
    candidate = Word("pkill", "killall", "pgrep", "process_iter")
    # tier 2: a string naming pkill/killall/pgrep and a call that may run a command, or a
    # process_iter() call and a call that may kill
    candidate_tree = staticmethod(lambda tree: _may_kill_by_name(tree))
    facts_needed = ("imports", "calls", "parents")
    ast_check = _Ast

    valid = [
        # by parent PID: only the caller's own children
        """
        import os, subprocess
        subprocess.run(["pkill", "-TERM", "-P", str(os.getpid())])
        """,
        # reading processes to report memory use
        """
        import psutil
        def biggest():
            procs = [(p.info["pid"], p.info["name"]) for p in psutil.process_iter(["pid", "name"])]
            return sorted(procs)[-1]
        """,
        # a process_iter loop that only kills its own children
        """
        import os, psutil
        def reap():
            for p in psutil.process_iter(["ppid", "name"]):
                if p.info["ppid"] == os.getpid() and p.info["name"] == "worker":
                    p.terminate()
        """,
        # the remedy
        """
        import os, signal, subprocess
        def stop(procs):
            for p in procs:
                os.killpg(p.pid, signal.SIGTERM)
        """,
        # pgrep only reads
        """
        import subprocess
        out = subprocess.check_output(["pgrep", "-f", "vllm"])
        """,
        # a string that mentions pkill but is not run
        """
        HELP = "Useful for cleanup like `sudo pkill -f vllm`"
        print(HELP)
        """,
    ]
    invalid = [
        # prime-rl's test fixture
        Invalid(
            """
            import subprocess

            def cleanup_zombies():
                subprocess.run(["pkill", "-f", "torchrun"])
                subprocess.run(["pkill", "-f", "VLLM"])
            """,
            count=2,
            message_contains="pkill",
        ),
        # a shell string with SIGKILL, an f-string, sudo and bash -c
        Invalid(
            """
            import os
            import subprocess as sp

            def teardown(port):
                os.system("pkill -9 -f 'vllm serve' || true")
                sp.call(f"killall -q python{port}", shell=True)
                sp.run(["sudo", "pkill", "-f", "sglang"], check=False)
                sp.run(["bash", "-c", "kill -9 $(pgrep -f ray::)"])
            """,
            count=4,
            message_contains="SIGKILL",
        ),
        # psutil: killed on a cmdline match
        Invalid(
            """
            import psutil

            def kill_servers():
                for proc in psutil.process_iter(["pid", "cmdline"]):
                    try:
                        if "vllm" in " ".join(proc.info["cmdline"] or []):
                            proc.kill()
                    except psutil.NoSuchProcess:
                        pass
            """,
            message_contains="process_iter",
        ),
        # psutil: name() match, os.kill
        Invalid(
            """
            import os, signal
            from psutil import process_iter

            def stop_ray():
                for p in list(process_iter()):
                    if p.name().startswith("raylet"):
                        os.kill(p.pid, signal.SIGTERM)
            """,
        ),
    ]

    # ------------------------------------------------------------------ commands (libcst)
    @staticmethod
    def _command(node: cst.Call) -> Optional[cst.BaseExpression]:
        cmd = next((a.value for a in node.args if a.keyword is None), None)
        if cmd is None:
            cmd = next((a.value for a in node.args if a.keyword is not None and a.keyword.value == "args"), None)
        return cmd

    @staticmethod
    def _elements(expr: cst.BaseExpression) -> Optional[list]:
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [el.value for el in expr.elements]
        return None

    def _split_argument(self, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
        if isinstance(expr, cst.Call) and self.facts.call_name(expr) == "shlex.split" and expr.args:
            return expr.args[0].value
        return None

    @staticmethod
    def _literal(expr: cst.BaseExpression) -> Optional[str]:
        return _literal(expr)

    # ------------------------------------------------------------------ psutil (libcst)
    def _check_process_iter(self, node: cst.Call) -> None:
        loop = self.facts.parent(node)
        if isinstance(loop, cst.Arg):  # for p in list(psutil.process_iter()) / sorted(...)
            wrapper = self.facts.parent(loop)
            outer = self.facts.parent(wrapper) if isinstance(wrapper, cst.Call) else None
            if isinstance(outer, cst.For) and outer.iter is wrapper and not _mentions(outer.body, _OWN_TREE_WORDS):
                self._report_kills(outer.body, require_match=True)
            return
        if isinstance(loop, cst.CompFor):  # for p in [p for p in process_iter() if <name match>]
            comp = loop
            holder = self.facts.parent(comp)
            outer = self.facts.parent(holder) if holder is not None else None
            if isinstance(outer, cst.For) and outer.iter is holder and any(
                    _matches_name(cond.test) for cond in comp.ifs):
                self._report_kills(outer.body, require_match=False)
            return
        if isinstance(loop, cst.For) and loop.iter is node:
            if not _mentions(loop.body, _OWN_TREE_WORDS):
                self._report_kills(loop.body, require_match=True)

    def _report_kills(self, body: cst.CSTNode, *, require_match: bool) -> None:
        rule = self

        class _Kills(cst.CSTVisitor):
            def __init__(self) -> None:
                self.conditions: list[cst.BaseExpression] = []

            def visit_If(self, n: cst.If) -> None:
                self.conditions.append(n.test)

            def leave_If(self, n: cst.If) -> None:
                self.conditions.pop()

            def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
                return False

            def visit_Call(self, n: cst.Call) -> None:
                if not _is_kill(rule, n):
                    return
                if require_match and not any(_matches_name(c) for c in self.conditions):
                    return
                rule.report(n, _kill_message(_is_sigkill(rule, n)))

        walk(body, _Kills())


def _literal(expr: cst.BaseExpression) -> Optional[str]:
    """The text of a string literal; f-string placeholders become ``{}``."""
    if isinstance(expr, cst.SimpleString):
        try:
            value = expr.evaluated_value
        except Exception:
            return None
        return value if isinstance(value, str) else None
    if isinstance(expr, cst.ConcatenatedString):
        left, right = _literal(expr.left), _literal(expr.right)
        return None if left is None or right is None else left + right
    if isinstance(expr, cst.FormattedString):
        parts = []
        for p in expr.parts:
            parts.append(p.value if isinstance(p, cst.FormattedStringText) else "{}")
        return "".join(parts)
    return None


def _shell_words(text: str) -> list[str]:
    """Words of a shell command line, with separators (``;``, ``|``, ``&&``, ``$(``) kept as ``;``."""
    out: list[str] = []
    for segment in _SEPARATORS.split(text):
        try:
            out.extend(shlex.split(segment))
        except ValueError:
            out.extend(segment.split())
        out.append(";")
    return out


def _kill_by_name(words: list[str]) -> Optional[tuple[str, bool]]:
    """(tool, uses SIGKILL) when the command kills by name, else None."""
    commands: list[list[str]] = [[]]
    for w in words:
        if w == ";":
            commands.append([])
        else:
            commands[-1].append(w)
    tools = [c for c in commands if c]
    all_words = [w for c in tools for w in c]
    sigkill = any(w in ("-9", "-KILL", "-SIGKILL", "--signal=9", "--signal=KILL") or w in ("KILL", "SIGKILL")
                  for w in all_words)
    for cmd in tools:
        i = 0
        while i < len(cmd) and cmd[i] in ("sudo", "exec", "command", "nohup"):
            i += 1
        if i < len(cmd) and cmd[i] == "timeout":
            i += 2
        if i >= len(cmd):
            continue
        tool = cmd[i].rsplit("/", 1)[-1]
        if tool in _BY_NAME:
            if tool == "pkill" and any(_TARGETED.match(w) for w in cmd[i + 1:]):
                continue
            return f"{tool} {' '.join(cmd[i + 1:])}".strip(), sigkill
    # kill $(pgrep -f x) / pgrep -f x | xargs kill
    if any(c and c[0].rsplit("/", 1)[-1] == "pgrep" for c in tools) and any("kill" in c for c in tools):
        return "kill $(pgrep ...)", sigkill
    return None


def _mentions(node: cst.CSTNode, words: frozenset[str]) -> bool:
    found = False

    class _V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal found
            found = found or n.value in words

        def visit_SimpleString(self, n: cst.SimpleString) -> None:
            nonlocal found
            found = found or n.value.strip("'\"") in words

    walk(node, _V())
    return found


def _matches_name(test: cst.BaseExpression) -> bool:
    """The condition looks at a process's name, command line or executable."""
    return _mentions(test, _NAME_ACCESSORS)


def _is_kill(rule: Rule, call: cst.Call) -> bool:
    func = call.func
    if rule.facts.call_name(call) in ("os.kill", "os.killpg"):
        return True
    return isinstance(func, cst.Attribute) and func.attr.value in _KILL_METHODS


def _is_sigkill(rule: Rule, call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "kill" and rule.facts.call_name(call) != "os.kill":
        return True
    return any("SIGKILL" in cst.Module([]).code_for_node(a.value) or
               (isinstance(a.value, cst.Integer) and a.value.value == "9") for a in call.args)


# ------------------------------------------------------------------ candidate tier 2 (ast)
_TOOL_WORDS = ("pkill", "killall", "pgrep")
#: what a shell escape in an f-string's raw text (libcst keeps it raw) reads as in shlex
_UNESCAPE = str.maketrans({"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v",
                           "'": None, '"': None, "\\": None})


def _may_kill_by_name(tree) -> bool:
    """True unless neither report path of SHD601 can fire:

    1. ``_check_command``: a call that may be one of ``COMMAND_CALLS`` (``may_call_any``) whose
       command (the first positional argument, ``*x``/``**x`` included as libcst counts them,
       else ``args=``) holds a string literal naming ``pkill``/``killall``/``pgrep``: every word
       ``_command_words`` reads comes from a string (``_literal``) inside that expression, and
       a shell word ``pkill`` (``shlex`` drops quotes and backslashes) is in the literal's text
       once quotes and backslashes are dropped (``_named``).
    2. ``_check_process_iter``: a ``for`` loop whose iterator holds a ``process_iter()`` call and
       whose body (not a nested def) holds a call ``_is_kill`` may accept (``.kill()``,
       ``.terminate()``, ``.send_signal()``, ``os.kill``/``os.killpg`` through aliases); unless
       the iterator is a comprehension (the name test is its ``if``), the kill must sit under
       an ``if`` whose test spells ``name``/``cmdline``/``exe`` (``_matches_name``).
    """
    aliased = tree.may_alias(_COMMAND_LASTS)
    for call in tree.all_calls():  # the callee's spelling first, the command's walk, then the callee's reading
        if (call.args or call.keywords) and tree.may_call_word(call, _COMMAND_LASTS, aliased) \
                and _command_names_tool(call) and tree.may_call_any(call, _COMMAND_NAMES):
            return True
    if not tree.mentions(("process_iter",)):
        return False
    for node in nested_statements(tree.module.body):  # a loop is a statement: no expression walked
        if type(node) in (ast.For, ast.AsyncFor) and any(
                type(c) is ast.Call and tree.may_call(c, "process_iter") for c in ast.walk(node.iter)):
            if _kills_in(tree, node.body, matched=type(node.iter) in COMPREHENSIONS):
                return True
    return False


#: ``COMMAND_CALLS`` as a tuple (``Tree.may_call_any`` reads a tuple of names once per process),
#: and their last words
_COMMAND_NAMES = tuple(sorted(COMMAND_CALLS))
_COMMAND_LASTS = frozenset(n.rsplit(".", 1)[-1] for n in COMMAND_CALLS)


# ------------------------------------------------------------------ path 1
def _command_names_tool(call: ast.Call) -> bool:
    args = positional_args(call)
    cmd = args[0] if args else next((k.value for k in call.keywords if k.arg == "args"), None)
    if cmd is None:
        return False
    for n in ast.walk(cmd):
        t = type(n)
        if t is ast.Constant and type(n.value) is str and _named(n.value):
            return True
        if t is ast.JoinedStr:  # libcst's text: the parts, each placeholder as "{}"
            text = "".join(v.value if type(v) is ast.Constant and type(v.value) is str else "{}" for v in n.values)
            if _named(text):
                return True
    return False


def _named(text: str) -> bool:
    text = text.translate(_UNESCAPE)
    return any(w in text for w in _TOOL_WORDS)


# ------------------------------------------------------------------ path 2
def _kills_in(tree, body: list, matched: bool) -> bool:
    """A kill call under ``body`` (not in a nested def), under an ``if`` testing a process's
    name unless ``matched``."""
    todo = [(s, matched) for s in body if type(s) not in DEFS]
    while todo:
        node, ok = todo.pop()
        t = type(node)
        if t is ast.If and not ok:
            ok = _tests_name(node.test)
        elif t is ast.Call and ok:
            func = node.func
            if (type(func) is ast.Attribute and func.attr in _KILL_METHODS) or tree.may_call(node, "kill") \
                    or tree.may_call(node, "killpg"):
                return True
        for child in ast.iter_child_nodes(node):
            if type(child) not in DEFS:
                todo.append((child, ok))
    return False


def _tests_name(test: ast.AST) -> bool:
    """libcst's ``_mentions(test, {"name", "cmdline", "exe"})``: a ``Name`` node (an identifier,
    an attribute, a keyword or a parameter) or a string containing one of them."""
    for n in ast.walk(test):
        t = type(n)
        if t is ast.Constant:
            # a libcst ``SimpleString`` piece of an implicit concatenation is a part of the value
            if type(n.value) is str and any(w in n.value for w in _NAME_ACCESSORS):
                return True
            continue
        word = n.id if t is ast.Name else n.attr if t is ast.Attribute else n.arg if t in (ast.keyword, ast.arg) \
            else None
        if word in _NAME_ACCESSORS:
            return True
    return False
