"""Detection on Python's ``ast`` (shutdown_lint/ast_engine, issue 30 session 9).

- the walk visits nodes in the order libcst's does (source order) for the constructs where
  ``ast``'s own field order differs;
- ``AstFacts`` answers every question as ``ModuleFacts`` does, call by call, name by name and
  function by function, over every rule example, the example project and the engine's sources;
- positions are libcst's (character columns, not UTF-8 bytes);
- the engine switch (``analyzer.AST_MODE``): every ported rule's examples and the example
  project give the same ``FileResult`` (diagnostics without edits, deps, warnings) on and off;
  a toy ported rule shows the same for suppressions, non-ASCII lines and fix plans.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from shutdown_lint import analyzer, registry
from shutdown_lint.analyzer import STAGE_AST, STAGE_LIBCST, lint_source
from shutdown_lint.ast_engine import AstCheck, AstFacts, FixPlan
from shutdown_lint.ast_engine import walk as ast_walk
from shutdown_lint.ast_engine.facts import cst_names, decode
from shutdown_lint.prefilter import ast_tree
from shutdown_lint.rule import Fix, Invalid, Replace, Rule
from shutdown_lint.settings import Settings
from shutdown_lint.traversal import walk as cst_walk

from .both_trees import Both, own_sources
from .test_ast_exit_paths import compare_exit_paths

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
RULES = registry.all_rules()
PORTED = [r for r in RULES if r.ast_check is not None]


# --------------------------------------------------------------------------- both trees


_Both = Both


def _qual(x) -> object:
    return None if x is None else x.qualname


def _describe(facts, node) -> tuple:
    """Every fact a rule may ask about ``node`` (a call or a name), tree-independent."""
    return (
        facts.qualified_name(node),
        _qual(facts.enclosing_function(node)),
        _qual(facts.enclosing_class(node)),
        _qual(facts.scope_of(node)),
        facts.in_cleanup_block(node),
        facts.in_main_guard(node),
        facts.in_lambda(node),
        len(list(facts.enclosing_trys(node))),
        facts.runs_in_driver(node),
        facts.is_process_entrypoint(node),
    )


def _describe_call(facts, call) -> tuple:
    return (
        facts.call_name(call),
        _describe(facts, call),
        _describe(facts, call.func),
        _qual(facts.resolve_call(call)),
        facts.is_awaited(call),
    )


def _describe_function(facts, fn) -> tuple:
    return (fn.name, fn.qualname, fn.is_async, _qual(fn.scope), fn.cls.qualname if fn.cls else None,
            list(fn.decorators), list(fn.params), len(fn.calls), sorted(fn.nested),
            sorted((n, [(b.kind, b.qualified) for b in bs]) for n, bs in fn.bindings.items()),
            [(_qual(f), _qual(t)) for f, t in [(fn, t) for _, t in facts.callees(fn)]],
            sorted(facts.contexts(fn)), sorted(_qual(g) for g in facts.callers(fn)),
            facts.runs_in_ray_worker(fn), facts.runs_in_torch_worker(fn), facts.process_tail(fn),
            facts.only_main_task(fn), len(facts.references(fn)))


def _describe_class(facts, c) -> tuple:
    return (c.name, c.qualname, _qual(c.scope), c.outer_class.qualname if c.outer_class else None,
            list(c.decorators), list(c.methods), sorted(c.attr_values), sorted(c.attr_annotations),
            facts.is_ray_remote_class(c), facts.is_threaded_ray_actor(c))


def _module_facts(facts) -> tuple:
    return (sorted((n, [(b.kind, b.qualified) for b in bs]) for n, bs in facts._module_bindings.items()),
            facts.has_imports, len(facts.main_guards), len(facts.module_calls),
            {m: facts.module_alias(m) for m in ("asyncio", "os", "sys", "signal", "ray", "torch", "subprocess")})


def compare_facts(source: "str | Both") -> int:
    """Assert that the two facts agree on ``source`` (a text, or one already parsed both ways); the
    number of calls compared."""
    both = source if isinstance(source, Both) else Both(source)
    source = both.source
    a, c = both.ast, both.cst
    # calls: same count, same (source) order, same spans, same answers
    assert [both.cst_span(n) for n in c.calls] == [a.span(n) for n in a.calls]
    for cc, ac in zip(c.calls, a.calls):
        assert _describe_call(c, cc) == _describe_call(a, ac), (both.cst_span(cc), source.splitlines()[a.span(ac)[0] - 1])
    # every name and attribute used as an expression: qualified name and scope answers
    ast_exprs = {a.span(n): n for n in ast.walk(both.tree) if isinstance(n, (ast.Name, ast.Attribute))}
    checked = 0
    for cn in both.cst_nodes((cst.Name, cst.Attribute)):
        an = ast_exprs.get(both.cst_span(cn))
        if an is None or type(an).__name__ != type(cn).__name__:
            continue  # a def's, a parameter's, an attribute's or a keyword's name: no ast node
        assert _describe(c, cn) == _describe(a, an), both.cst_span(cn)
        assert a.code_for_node(an) == both.module.code_for_node(cn), both.cst_span(cn)
        checked += 1
    assert checked >= len([n for n in ast_exprs.values() if isinstance(n, ast.Attribute)])
    assert [_describe_function(c, f) for f in c.functions] == [_describe_function(a, f) for f in a.functions]
    assert [_describe_class(c, k) for k in c.classes] == [_describe_class(a, k) for k in a.classes]
    assert _module_facts(c) == _module_facts(a)
    # code_for_node: every call, callee and argument; every statement that is alone on its line(s)
    for cc, ac in zip(c.calls, a.calls):
        args = [x.value if type(x) is ast.Starred else x for x in ac.args]
        for x, y in [(cc, ac), (cc.func, ac.func), *zip([arg.value for arg in cc.args], args)]:
            assert a.code_for_node(y) == both.module.code_for_node(x), both.cst_span(x)
    statements = {both.cst_span(n)[:2]: n for n in both.cst_nodes((cst.BaseStatement,))}
    for st in ast.walk(both.tree):
        if isinstance(st, ast.stmt):
            first = st.decorator_list[0] if getattr(st, "decorator_list", None) else st
            cs = statements.get((first.lineno, a.column(first.lineno, first.col_offset - (first is not st))))
            if cs is not None and not (isinstance(cs, cst.SimpleStatementLine) and len(cs.body) > 1):
                assert a.code_for_node(st) == both.module.code_for_node(cs), (st.lineno, type(st).__name__)
    # statements enclosing each call: the same start (libcst's line holds ``a; b``: compare compound ones)
    for cc, ac in zip(c.calls, a.calls):
        cs, as_ = c.enclosing_statement(cc), a.enclosing_statement(ac)
        assert a.simple_statement_line(ac) == isinstance(cs, cst.SimpleStatementLine), both.cst_span(cc)
        if not isinstance(cs, cst.SimpleStatementLine):
            assert both.cst_span(cs)[:2] == a.span(as_)[:2]
        else:
            assert both.cst_span(cs)[0] == a.span(as_)[0] and not hasattr(as_, "body")
    return len(c.calls)


def _example_sources() -> list:
    out = []
    for rule in RULES:
        valid, invalid = rule.examples()
        for i, ex in enumerate(invalid):
            out.append(pytest.param(ex.code, id=f"{rule.code}-invalid-{i}"))
        for i, ex in enumerate(valid):
            out.append(pytest.param(ex.code, id=f"{rule.code}-valid-{i}"))
    return out


def _parses_here(source: str) -> bool:
    try:
        ast.parse(source)
        return True
    except SyntaxError:
        return False


@pytest.mark.parametrize("source", _example_sources())
def test_facts_and_exit_paths_agree_on_rule_examples(source):
    """Both comparisons on one parse of each example: the facts and the exit paths
    (``test_ast_exit_paths.compare_exit_paths``)."""
    if not _parses_here(source):
        pytest.skip("syntax newer than this Python: the ast path is not taken")
    both = Both(source)
    compare_facts(both)
    compare_exit_paths(both)


OWN = own_sources()


def test_own_sources_are_found():
    assert len(OWN) > 50


@pytest.mark.parametrize("path", OWN, ids=[str(p.relative_to(REPO)) for p in OWN])
def test_facts_and_exit_paths_agree_on_examples_and_own_sources(path):
    """Both comparisons on one parse of each file: the facts (``compare_facts``) and the exit paths
    (``test_ast_exit_paths.compare_exit_paths``; the count of blocks is
    ``test_ast_exit_paths.test_own_sources_hold_over_500_blocks``)."""
    both = Both(decode(path.read_bytes()))
    compare_facts(both)
    compare_exit_paths(both)


SCOPING = textwrap.dedent(
    """\
    import asyncio as aio
    from concurrent.futures import ThreadPoolExecutor as Pool
    import os.path

    def sleep(x):
        return x

    class Runner:
        pool = None

        def __init__(self):
            self.pool = Pool(2)
            self.loop = aio.get_running_loop()

        def run(self, aio=None):
            aio.gather()          # the parameter, not the module
            self.pool.submit(sleep, 1)
            self.loop.create_task(self.step())
            os.path.join("a", "b")

            def inner():
                sleep(1)
                return [sleep(y) for y in range(3)]
            return inner

        async def step(self):
            try:
                await aio.sleep(1)
            except aio.CancelledError as e:
                self.pool.shutdown()
            finally:
                (lambda: aio.sleep(0))()

    def other():
        import signal as sig
        sig.signal(sig.SIGTERM, sig.SIG_DFL)

    if __name__ == "__main__":
        aio.run(Runner().step())
        x = {aio.sleep(1): Pool(1), **{}}
        y = aio.sleep(1) if x else Runner.run(None)
    """
)


HEADER_LINES = (
    "def f():\n    if x: \\\n        g()\n    if y: \\\n      \\\n     h(); k()\n    if z:\n        m()\n"
    "    n(); o()\n    while q: p()\n    try: r()\n    except E: s()\n    else: t()\n    finally: u()\n"
    "    with v(): w()\n    for i in x(): y()\n    class C: z = a()\n"
)


def test_facts_agree_on_bodies_on_their_header_line():
    assert compare_facts(HEADER_LINES) == 16


PARENTHESES = (
    "f(\n    (x)\n)\nf((x),)\nwith (x):\n    pass\nwith (x) as y:\n    pass\nclass A((B)):\n    pass\n"
    "f(((x)))\ng(a, (b))\nh((c for c in d))\nk(  # c\n    e for e in f\n)\nf((  # c\n  x))\n"
    "s = f'{sorted(n.m() for n in q)}'\n"
)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_facts_agree_on_parentheses_and_line_ends(newline):
    """Parentheses a node owns, or its parent does (R503's cases), in files with each line end;
    a body after a backslash on its header's line (R503: a CR-only file)."""
    assert compare_facts(PARENTHESES.replace("\n", newline)) == 9
    assert compare_facts(HEADER_LINES.replace("\n", newline)) == 16


def test_facts_agree_on_scoping_shapes():
    assert compare_facts(SCOPING) > 15
    both = _Both(SCOPING)
    names = [both.ast.call_name(c) for c in both.ast.calls]
    assert "concurrent.futures.ThreadPoolExecutor.submit" in names
    assert "asyncio.AbstractEventLoop.create_task" in names and "signal.signal" in names


# --------------------------------------------------------------------------- walk order

ORDER_CASES = {
    "decorators": "@a(b())\n@c\ndef f(x=d(), *, y=e()) -> g():\n    h()\n",
    "class": "@k()\nclass C(a(), *c(), metaclass=b()):\n    d()\n",
    "call_args": "f(a(), *b(), c=d(), *e(), **g(), h=i())\n",
    "dict": "{a(): b(), **c(), d(): e()}\n",
    "if_exp": "x = a() if b() else c()\n",
    "lambda_defaults": "f = lambda x=a(), *y, z=b(), **w: c()\n",
    "positional_defaults": "def f(a, /, b=c(), *d, e, g=h(), **i): pass\n",
    "comprehension": "[a(x) for x in b() if c(x) for y in d(x)]\n{k(): v() for k in e()}\n",
    "with_try": ("async def f():\n    async with a() as b, c():\n        try:\n            await d()\n"
                 "        except E() as e:\n            g()\n        else:\n            h()\n"
                 "        finally:\n            i()\n"),
    "fstring": "f'{a()!r:{b()}} {c()}'\n",
    "semicolons": "a(); b()\nif c(): d()\n",
    "nested_attr": "a.b(c).d(e.f()).g\n",
    "match": "match a():\n    case {'k': b, **r} if c():\n        d()\n    case [e, *f]:\n        g()\n",
}


#: ``async def``/``async with``/``async for`` are their own ast classes, a flag in libcst
_ASYNC = {"AsyncFunctionDef": "FunctionDef", "AsyncWith": "With", "AsyncFor": "For"}


@pytest.mark.parametrize("source", ORDER_CASES.values(), ids=ORDER_CASES.keys())
def test_walk_order_is_libcsts(source):
    """The nodes rules hook, in walk order, with libcst's spans, ``visit``s and ``leave``s interleaved."""
    both = _Both(source)
    types = ("Call", "Name", "Attribute", "Lambda", "Await", "With", "Try", "ExceptHandler", "FunctionDef",
             "ClassDef", "If", "IfExp", "Dict", "ListComp", "DictComp")
    ast_types = frozenset(t for t in (getattr(ast, n) for n in (*types, *_ASYNC)))
    ast_events = ast_walk.record(both.tree, ast_types, ast_types)
    spans = {}
    for e in ast_events:
        node = e[0] if type(e) is tuple else e
        spans[both.ast.span(node)] = node

    cst_events = []

    class _V(cst.CSTVisitor):
        def on_visit(self, node) -> bool:
            if type(node).__name__ in types:
                cst_events.append(node)
            return True

        def on_leave(self, node) -> None:
            if type(node).__name__ in types:
                cst_events.append((node,))

    cst_walk(both.module, _V())

    def key(event, span_of):
        node = event[0] if type(event) is tuple else event
        name = type(node).__name__
        return ("leave" if type(event) is tuple else "visit", _ASYNC.get(name, name), span_of(node))

    ast_keys = [key(e, both.ast.span) for e in ast_events]
    # libcst has Names with no ast node (a def's or a keyword's name, an attribute): compare the others
    cst_keys = [k for k in (key(e, both.cst_span) for e in cst_events)
                if k[1] != "Name" or (k[2] in spans and type(spans[k[2]]) is ast.Name)]
    assert ast_keys == cst_keys


@pytest.mark.parametrize("source", ORDER_CASES.values(), ids=ORDER_CASES.keys())
def test_source_order_is_the_walks(source):
    tree = ast.parse(source)
    everything = frozenset(type(n) for n in ast.walk(tree))
    walked = [e for e in ast_walk.record(tree, everything, frozenset()) if e is not tree]
    assert list(ast_walk.source_order(tree.body)) == walked
    skipped = list(ast_walk.source_order(tree.body, skip=(ast.Call,)))
    assert not any(isinstance(n, ast.Call) for n in skipped) and len(skipped) < len(walked)


def test_visit_returning_false_mutes_only_that_check():
    seen: dict[str, list] = {"a": [], "b": []}

    class A(AstCheck):
        def visit_FunctionDef(self, node):
            return False

        def visit_Call(self, node):
            seen["a"].append(node.func.id)

        def leave_FunctionDef(self, node):
            seen["a"].append("leave " + node.name)

    class B(AstCheck):
        def visit_Call(self, node):
            seen["b"].append(node.func.id)

    tree = ast.parse("a()\ndef f():\n    b()\nc()\n")
    facts = AstFacts.build(tree, "")
    checks = [A(Rule, facts, Settings(selected=()), []), B(Rule, facts, Settings(selected=()), [])]
    hooks = ast_walk.hooks_of(checks)
    ast_walk.run(hooks, ast_walk.record(tree, hooks.visits, hooks.leaves))
    assert seen == {"a": ["a", "leave f", "c"], "b": ["a", "b", "c"]}


def test_a_hook_on_no_ast_class_is_refused():
    class Bad(AstCheck):
        def visit_Finally(self, node):  # libcst has one, ast does not
            pass

    with pytest.raises(ValueError, match="Finally"):
        ast_walk.Hooks.of_classes([Bad])


# --------------------------------------------------------------------------- positions and code


NON_ASCII = 'x = "é"; f(1)\ns = "日本語"  ;  g(  "ü")\n# ☃\nclass Ｋ: pass\nh(ä=1)\n'


def test_columns_are_characters_not_bytes():
    both = _Both(NON_ASCII)
    assert [both.cst_span(c) for c in both.cst.calls] == [both.ast.span(c) for c in both.ast.calls]
    assert both.ast.span(both.ast.calls[0]) == (1, 9, 1, 13)  # bytes: 10
    assert both.ast.span(both.ast.calls[1])[1] == 14


def _code_without_module_pairs(both) -> list:
    """(libcst node, ast node) for every call, callee, argument, name and attribute."""
    a, c = both.ast, both.cst
    pairs = []
    for cc, ac in zip(c.calls, a.calls):
        args = [x.value if type(x) is ast.Starred else x for x in ac.args]
        pairs += [(cc, ac), (cc.func, ac.func), *zip([arg.value for arg in cc.args], args)]
    exprs = {a.span(n): n for n in ast.walk(both.tree) if isinstance(n, (ast.Name, ast.Attribute))}
    for cn in both.cst_nodes((cst.Name, cst.Attribute)):
        an = exprs.get(both.cst_span(cn))
        if an is not None and type(an).__name__ == type(cn).__name__:
            pairs.append((cn, an))
    return pairs


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_code_without_module_is_libcsts(newline):
    """``AstFacts.code_without_module`` is ``cst.Module([]).code_for_node`` (SHD101's and SHD404's
    text) on every call, callee, argument, name and attribute of the rule examples and the example
    project, with each line ending."""
    sources = [p.values[0] for p in _example_sources()] + [f.read_text() for f in sorted(EXAMPLES.rglob("*.py"))]
    compared = 0
    for source in sources:
        source = source.replace("\r\n", "\n").replace("\n", newline)
        if not _parses_here(source):
            continue
        both = _Both(source)
        for cn, an in _code_without_module_pairs(both):
            assert both.ast.code_without_module(an) == cst.Module([]).code_for_node(cn), both.cst_span(cn)
            compared += 1
    assert compared > 5000


def test_cst_names_are_libcsts():
    """``ast_engine.facts.cst_names`` gives the values of libcst's ``Name`` nodes under every call,
    callee, argument, name and attribute of the rule examples and the example project."""
    sources = [p.values[0] for p in _example_sources()] + [f.read_text() for f in sorted(EXAMPLES.rglob("*.py"))]
    compared = 0
    for source in sources:
        if not _parses_here(source):
            continue
        both = _Both(source)
        for cn, an in _code_without_module_pairs(both):
            names: set = set()

            class _Names(cst.CSTVisitor):
                def visit_Name(self, node) -> None:
                    names.add(node.value)

            cst_walk(cn, _Names())
            assert cst_names(an) == names, both.cst_span(cn)
            compared += 1
    assert compared > 5000


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_string_tokens_tell_libcsts_strings(newline):
    """``AstFacts.string_tokens``: a string constant with one token is libcst's ``SimpleString``,
    an f-string with more than one is a ``ConcatenatedString`` (SHD101's and SHD404's test), over
    the rule examples, the example project and the ast engine's sources."""
    files = sorted(EXAMPLES.rglob("*.py")) + sorted((REPO / "shutdown_lint" / "ast_engine").glob("*.py"))
    sources = [p.values[0] for p in _example_sources()] + [f.read_text() for f in files]
    compared = 0
    for source in sources:
        source = source.replace("\r\n", "\n").replace("\n", newline)
        if not _parses_here(source):
            continue
        both = _Both(source)
        strings = {both.cst_span(n): n for n in both.cst_nodes((cst.BaseString,))}
        in_fstrings = {id(v) for j in ast.walk(both.tree) if type(j) is ast.JoinedStr for v in j.values}
        for n in ast.walk(both.tree):
            if type(n) is ast.Constant and type(n.value) in (str, bytes) and id(n) not in in_fstrings:
                assert (both.ast.string_tokens(n) == 1) == isinstance(strings[both.ast.span(n)], cst.SimpleString)
            elif type(n) is ast.JoinedStr and both.ast.span(n) in strings:  # not a format spec
                assert (both.ast.string_tokens(n) > 1) == isinstance(strings[both.ast.span(n)], cst.ConcatenatedString)
            else:
                continue
            compared += 1
    assert compared > 500


def test_code_for_node_of_expressions_and_top_level_statements():
    source = textwrap.dedent(
        """\
        import os

        # the worker
        x = f(a,
              b)  # trailing
        @dec
        def g():
            if y:  # c
                z = "é"
            return z
        if __name__ == "__main__":
            g()
        """
    )
    both = _Both(source)
    # top-level statements: libcst's text (leading comments and lines, trailing comment)
    for cs, as_ in zip(both.module.body, both.tree.body):
        assert both.ast.code_for_node(as_) == both.module.code_for_node(cs)
    # a nested statement: dedented, as libcst renders it
    inner_c = both.module.body[2].body.body[0]
    inner_a = both.tree.body[2].body[0]
    assert both.ast.code_for_node(inner_a) == both.module.code_for_node(inner_c)
    # expressions: the source slice
    for cc, ac in zip(both.cst.calls, both.ast.calls):
        assert both.ast.code_for_node(ac) == both.module.code_for_node(cc)


# --------------------------------------------------------------------------- the switch


def _key(result):
    rows = []
    for d in result.diagnostics:
        row = d.to_dict()
        if row.get("fix"):
            row["fix"] = {**row["fix"], "edits": []}
        rows.append(row)
    return (result.error, rows, result.warnings, result.deps, result.parsed)


def _both_ways(source: bytes, path: str, settings: Settings, monkeypatch):
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    on = lint_source(source, path, settings, fix_edits=False)
    monkeypatch.setattr(analyzer, "AST_MODE", "off")
    off = lint_source(source, path, settings, fix_edits=False)
    with_edits = lint_source(source, path, settings, fix_edits=True)
    assert with_edits.stage != STAGE_AST
    return on, off


def _ported_cases():
    for rule in PORTED:
        valid, invalid = rule.examples()
        for i, ex in enumerate(invalid):
            yield pytest.param(rule, ex, id=f"{rule.code}-invalid-{i}")
        for i, ex in enumerate(valid):
            yield pytest.param(rule, ex, id=f"{rule.code}-valid-{i}")


@pytest.mark.parametrize("rule, example", list(_ported_cases()) or [pytest.param(None, None, id="none-ported")])
def test_ported_rule_examples_are_equal_on_and_off(rule, example, monkeypatch):
    if rule is None:
        pytest.skip("no rule has an ast check yet")
    settings = Settings(selected=(rule.code,), target_version=example.target_version or "py312",
                        rule_options={rule.code: dict(example.options)} if example.options else {})
    on, off = _both_ways(example.code.encode(), "example.py", settings, monkeypatch)
    assert _key(on) == _key(off)
    if isinstance(example, Invalid) and _parses_here(example.code):
        assert on.stage == STAGE_AST and on.diagnostics


def test_example_project_is_equal_on_and_off(monkeypatch):
    if not PORTED:
        pytest.skip("no rule has an ast check yet")
    settings = Settings(selected=tuple(r.code for r in PORTED), target_version="py311")
    for path in sorted(EXAMPLES.rglob("*.py")):
        on, off = _both_ways(path.read_bytes(), str(path), settings, monkeypatch)
        assert _key(on) == _key(off), path


# A toy ported rule: ``time.sleep`` in an ``async def``, both ways, with a fix and a fix plan.
class _SleepAst(AstCheck):
    def visit_Call(self, node: ast.Call) -> None:
        fn = self.facts.enclosing_function(node)
        if fn is not None and fn.is_async and self.facts.call_name(node) == "time.sleep":
            plan = None if self.facts.in_cleanup_block(node) else FixPlan.unsafe("await asyncio.sleep")
            self.report(node, f"blocking sleep in `{fn.name}`", fix=plan)


class _SleepRule(Rule):
    code = "SHD990"
    name = "toy-blocking-sleep"
    summary = "toy"
    invalid = [Invalid("import time\nasync def f():\n    time.sleep(1)\n")]
    ast_check = _SleepAst

    def visit_Call(self, node: cst.Call) -> None:
        fn = self.facts.enclosing_function(node)
        if fn is not None and fn.is_async and self.facts.call_name(node) == "time.sleep":
            fix = None if self.facts.in_cleanup_block(node) else Fix.unsafe(
                Replace(node, node), message="await asyncio.sleep")
            self.report(node, f"blocking sleep in `{fn.name}`", fix=fix)


TOY = textwrap.dedent(
    """\
    import time as t, time
    async def é():
        s = "日本"; t.sleep(1)
        time.sleep(2)  # noqa: SHD990
        time.sleep(3)  # noqa: SHD999
        try:
            pass
        finally:
            t.sleep(4)
        def sync():
            t.sleep(5)
    """
)


def test_toy_ported_rule_is_equal_on_and_off(monkeypatch):
    original = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, _SleepRule))
    settings = Settings(selected=("SHD990",))
    on, off = _both_ways(TOY.encode(), "toy.py", settings, monkeypatch)
    assert on.stage == STAGE_AST and off.stage == STAGE_LIBCST
    assert _key(on) == _key(off)
    # line 3: character column 15 (byte column 17); line 4 suppressed; line 5's noqa names another code
    assert [(d.line, d.column, d.fix is not None) for d in on.diagnostics] == [(3, 15, True), (5, 5, True),
                                                                                (9, 9, False)]
    assert on.warnings and "SHD999" in on.warnings[0]
    # a file that also admits a rule without an ast check takes the libcst path
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, _SleepRule, _NotPorted))
    settings = Settings(selected=("SHD990", "SHD991"))
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    assert lint_source(TOY.encode(), "toy.py", settings, fix_edits=False).stage == STAGE_LIBCST


class _NotPorted(_SleepRule):
    code = "SHD991"
    name = "toy-not-ported"
    ast_check = None


@pytest.mark.parametrize("variant", ["bom", "crlf", "cr", "formfeed", "latin1"])
def test_toy_ported_rule_is_equal_on_and_off_whatever_the_bytes(variant, monkeypatch):
    original = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, _SleepRule))
    text = TOY.replace("\n", "\r\n") if variant == "crlf" else TOY.replace("\n", "\r") if variant == "cr" else TOY
    if variant == "formfeed":  # a page break before a line (Python resets the indentation there)
        text = "\x0c\n\x0c" + text.replace("\n    def sync", "\n\x0c    def sync")
    if variant == "latin1":
        source = ("# -*- coding: latin-1 -*-\n" + text.replace("日本", "ÿé").replace("é()", "e()")).encode("latin-1")
    else:
        source = (b"\xef\xbb\xbf" if variant == "bom" else b"") + text.encode()
    on, off = _both_ways(source, "toy.py", Settings(selected=("SHD990",)), monkeypatch)
    assert on.stage == STAGE_AST and _key(on) == _key(off)
    # CR-only line ends: the suppression comments are not read (both engines: suppression.parse)
    assert len(on.diagnostics) == (4 if variant == "cr" else 3)


def test_both_reports_differences_on_stderr(monkeypatch, capsys):
    class _Wrong(_SleepAst):
        def report(self, node, message, **kw):
            super().report(node, message + "!", **kw)

    class _WrongRule(_SleepRule):
        ast_check = _Wrong

    original = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, _WrongRule))
    monkeypatch.setattr(analyzer, "AST_MODE", "both")
    result = lint_source(TOY.encode(), "toy.py", Settings(selected=("SHD990",)), fix_edits=False)
    assert result.stage == STAGE_LIBCST and result.diagnostics[0].message.endswith("`é`")
    err = capsys.readouterr().err
    assert err.count("ast-engine difference: toy.py: only on ast:") == 3, err


def test_the_mode_is_read_from_the_environment():
    import subprocess

    code = "from shutdown_lint import analyzer; print(analyzer.AST_MODE)"
    for value, expected in (("on", "on"), ("both", "both"), ("off", "off"), ("", "on"), ("bogus", "on")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={"SHUTDOWN_LINT_AST": value, "PATH": ""}).stdout.strip()
        assert out == expected


def test_no_ast_path_without_exact_names_or_for_newer_syntax(monkeypatch):
    original = registry.all_rules()
    monkeypatch.setattr(registry, "all_rules", lambda: (*original, _SleepRule))
    monkeypatch.setattr(analyzer, "AST_MODE", "on")
    settings = Settings(selected=("SHD990",))
    nfkc = "import time\nasync def f():\n    ｔime.sleep(1)\n"  # the ast says ``time``, libcst ``ｔime``
    result = lint_source(nfkc.encode(), "n.py", settings, fix_edits=False)
    assert result.stage == STAGE_LIBCST and result.diagnostics == []
    assert ast_tree.parse(nfkc.encode()).exact_names is False


def test_statistics_count_ast_files_as_analysed_in_full():
    from shutdown_lint.output.statistics import stages_line

    line = stages_line({"text": 5, "libcst": 2, "ast": 3})
    # which engine ran is not the user's concern: the line reads as with libcst alone
    assert line == stages_line({"text": 5, "libcst": 5})
    assert "5 held nothing" in line and "5 analysed in full, 0 could not" in line
