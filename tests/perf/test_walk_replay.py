"""The rules' traversal replays the facts' walk (``MultiRuleVisitor.replay``): every rule
hook must be called on exactly the nodes, in exactly the order, that a walk of the tree
calls it on; and the replay must step aside (a real walk) whenever it cannot stand in."""

from __future__ import annotations

import libcst as cst
import pytest

from shutdown_lint import registry
from shutdown_lint.facts import ModuleFacts
from shutdown_lint.traversal import MultiRuleVisitor, walk

from test_walk import _sources  # noqa: E402  (tests/perf is on the path: pytest prepends it)


def _logging_rule(hooks, facts, log):
    """A stand-in rule with the hooks named in ``hooks``, each logging (hook, node id)."""
    def hook(name):
        return lambda self, node: log.append((name, id(node)))

    names = sorted(hooks)
    cls = type("Logged", (), {name: hook(name) for name in names})
    cls.visitor_methods = classmethod(lambda c: {n: n for n in names})
    rule = cls()
    rule.facts = facts
    return rule


def _registered_hooks():
    return [sorted(r.visitor_methods()) for r in registry.all_rules()]


def _parsed():
    for name, code in _sources():
        try:
            yield name, cst.parse_module(code)
        except cst.ParserSyntaxError:
            continue


def test_replay_calls_every_registered_hook_as_a_walk_does():
    hook_sets = _registered_hooks()
    for name, module in _parsed():
        facts = ModuleFacts.build(module)
        replayed: list = []
        walked: list = []
        visitor = MultiRuleVisitor([_logging_rule(h, facts, replayed) for h in hook_sets])
        assert visitor.replay(module, visitor.skip), name
        plain = MultiRuleVisitor([_logging_rule(h, None, walked) for h in hook_sets])
        assert not plain.replay(module, plain.skip)  # no facts: nothing recorded to replay
        walk(module, plain, plain.skip)
        assert replayed == walked, name
        # walk() itself replays for the rules' visitor (what the engine calls)
        again: list = []
        visitor = MultiRuleVisitor([_logging_rule(h, facts, again) for h in hook_sets])
        walk(module, visitor, visitor.skip)
        assert again == walked, name


@pytest.mark.parametrize("hooks", [
    ["visit_Comma"],  # layout: the facts' walk skips it
    ["visit_Call", "leave_Call"],  # no registered rule leaves a Call: not recorded
    ["visit_Lambda"],  # no registered rule visits a Lambda: not recorded
], ids=["layout", "leave", "unregistered"])
def test_replay_steps_aside_for_what_was_not_recorded(hooks):
    code = "def f(a, b):\n    return g(a, lambda: h(b),)\n"
    module = cst.parse_module(code)
    facts = ModuleFacts.build(module)
    replayed: list = []
    walked: list = []
    visitor = MultiRuleVisitor([_logging_rule(hooks, facts, replayed)])
    assert not visitor.replay(module, visitor.skip)
    walk(module, visitor, visitor.skip)
    plain = MultiRuleVisitor([_logging_rule(hooks, None, walked)])
    walk(module, plain, plain.skip)
    assert replayed == walked and walked


def test_replay_only_for_the_tree_the_facts_were_built_from():
    module = cst.parse_module("f(1)\n")
    other = cst.parse_module("f(1)\n")
    facts = ModuleFacts.build(module)
    log: list = []
    visitor = MultiRuleVisitor([_logging_rule(["visit_Call"], facts, log)])
    assert not visitor.replay(other, visitor.skip)
    assert visitor.replay(module, visitor.skip) and len(log) == 1
    # a nested walk of a subtree (rules walk function bodies) is a real walk
    call = module.body[0].body[0].value
    assert not visitor.replay(call, visitor.skip)


def test_normalise_finds_the_alias_by_its_dotted_prefix():
    """``facts.types.normalise`` looks the alias up by the dotted prefixes of the name: the
    same as trying every alias in turn while no alias is a dotted prefix of another."""
    from shutdown_lint.facts.types import TYPE_ALIASES, normalise

    for alias in TYPE_ALIASES:
        assert not any(other != alias and alias.startswith(other + ".") for other in TYPE_ALIASES), alias

    def every_alias(qualified: str) -> str:
        for alias, canonical in TYPE_ALIASES.items():
            if qualified == alias or qualified.startswith(alias + "."):
                return canonical + qualified[len(alias):]
        return qualified

    names = ["", ".", "x", "io", "io.", "io..read", "pathlib.PosixPath", "pathlib.PosixPathX", "pathlib.Posix",
             "torch.multiprocessing.Queue", "torch.multiprocessingQueue", "io.TextIOWrapper.read.x",
             "a.b.c.d.e", "multiprocessing.pool.ApplyResult.get", "typing.IO"]
    names += [a + suffix for a in TYPE_ALIASES for suffix in ("", ".m", ".m.n", "m", ".")]
    for name in names:
        assert normalise(name) == every_alias(name), name


def test_node_classes_the_facts_test_by_exact_type_have_no_subclasses():
    """``facts.tree``, ``facts.names`` and the collector test these classes with ``type(x) is``
    (an ``isinstance`` that fails is a Python call: libcst's classes are ABCs): the same answer
    only while no class derives from them, nor is registered as a virtual subclass."""
    import abc

    from shutdown_lint.traversal import _node_types

    exact = [cst.FunctionDef, cst.Lambda, cst.ClassDef, cst.Try, cst.TryStar, cst.Finally, cst.ExceptHandler,
             cst.ExceptStarHandler, cst.Call, cst.Name, cst.Attribute, cst.Await, cst.Tuple, cst.List,
             cst.StarredElement]
    for cls in exact:
        assert not [t for t in _node_types() if t is not cls and issubclass(t, cls)], cls
        assert not abc._get_dump(cls)[0], cls  # no registered virtual subclass


def test_walk_of_a_plain_visitor_calls_its_hooks_as_libcst_visit_does():
    """A visitor that keeps libcst's ``on_visit``/``on_leave`` is walked with its hooks looked
    up once per node class (``traversal._walk_hooks``): the same hooks on the same nodes in the
    same order as ``module.visit``, a ``visit_`` hook returning False pruning, layout hooks too."""
    from shutdown_lint.traversal import _plain

    def make(log):
        class Plain(cst.CSTVisitor):
            def visit_FunctionDef(self, node):
                log.append(("visit_FunctionDef", id(node)))
                return len(node.params.params) != 1  # prunes some functions

            def leave_FunctionDef(self, node):
                log.append(("leave_FunctionDef", id(node)))

            def visit_Call(self, node):
                log.append(("visit_Call", id(node)))

            def leave_Attribute(self, node):
                log.append(("leave_Attribute", id(node)))

            def visit_Comma(self, node):
                log.append(("visit_Comma", id(node)))

            def visit_Lambda(self, node):
                log.append(("visit_Lambda", id(node)))
                return False

            def visit_Module(self, node):
                log.append(("visit_Module", id(node)))

        return Plain()

    for name, module in _parsed():
        expected: list = []
        got: list = []
        module.visit(make(expected))
        visitor = make(got)
        assert _plain(visitor)
        walk(module, visitor)
        assert got == expected, name

    # a visitor that overrides on_visit, or has a hook on the instance, is walked as before
    class Overrides(cst.CSTVisitor):
        def on_visit(self, node):
            return True

    assert not _plain(Overrides())
    instance_hook = cst.CSTVisitor()
    instance_hook.visit_Call = lambda node: None
    assert not _plain(instance_hook)
