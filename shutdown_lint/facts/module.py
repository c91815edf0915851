"""``ModuleFacts``: every shared fact about one parsed module, built from one walk."""

from __future__ import annotations

from functools import cached_property
from typing import Optional

from ..lazy_libcst import libcst as cst

from .execution import ExecutionQueries
from .exit_paths import ExitPathQueries
from .model import ClassInfo, FunctionInfo, Scope, _Binding
from .names import Names
from .tree import TreeShape
from .types import TypeQueries


class FactTables:
    """The tables the one walk fills (``collector._Scopes``), empty: the same on libcst
    (``ModuleFacts``) and on ``ast`` (``ast_engine.facts.AstFacts``), each holding its tree's nodes."""

    def __init__(self, module, path: str = "<string>") -> None:
        self.module = module
        self.path = path
        self._parents: dict = {}
        #: every ``Name`` by its value and every ``Attribute`` by its attribute, in source order
        #: (``name_nodes``, ``attribute_nodes``: rules looking for uses need no walk of their own)
        self._names_by_value: dict[str, list] = {}
        self._attributes_by_name: dict[str, list] = {}
        self._module_bindings: dict[str, list[_Binding]] = {}
        self.functions: list[FunctionInfo] = []
        self.classes: list[ClassInfo] = []
        self.calls: list = []
        self.module_calls: list = []
        self.main_guards: list = []
        self.has_imports = False
        self._function_of: dict[object, FunctionInfo] = {}
        self._class_of: dict[object, ClassInfo] = {}
        self._call_scope: dict[object, Scope] = {}
        self._awaited: set = set()
        self._decorator_exprs: dict[FunctionInfo, list] = {}
        self._class_decorator_exprs: dict[ClassInfo, list] = {}
        self._qn_cache: dict[tuple[int, int], Optional[str]] = {}
        self._call_names: dict[object, Optional[str]] = {}
        self._typing_stack: set[int] = set()
        #: the project index seen from this file (``project.ProjectView``), set by the engine;
        #: None for a lone snippet or when the run has no index
        self.project = None
        #: the module's source text, set by the engine (None: unknown); every node's code is made
        #: of pieces of it, so a word it lacks is in no node's code (``spells``)
        self.source_text: Optional[str] = None


class ModuleFacts(FactTables, TreeShape, Names, ExecutionQueries, ExitPathQueries, TypeQueries):
    """Facts about one parsed module. Built by ``ModuleFacts.build(module)``."""

    @classmethod
    def build(cls, module: cst.Module, path: str = "<string>") -> "ModuleFacts":
        facts = cls(module, path)
        from ..traversal import own_hooks, recorded_types, skippable  # local: traversal imports rule, which names facts
        from .cst_collector import _Collector  # local: it imports libcst (lazy_libcst)

        # = module.visit(...) without rebuilding nodes, and without layout nodes (traversal.py);
        # the collector overrides on_visit (parents), so its skip set is named here
        collector = _Collector(facts)
        skip = skippable(own_hooks(_Collector))
        visits, leaves = recorded_types(skip)
        # the nodes the rules' hooks are called on, in walking order: the rules' traversal
        # replays them (``MultiRuleVisitor.replay``) instead of walking the tree a second time
        facts._walk_events = collector.run(module, skip, visits, leaves)
        facts._walk_recorded = (module, skip, visits, leaves) if facts._walk_events is not None else None
        collector.release()
        # decorators were recorded before all imports were seen; resolve them now
        for fn, exprs in facts._decorator_exprs.items():
            fn.decorators = [d for d in (facts._decorator_name(e, fn.scope) for e in exprs) if d]
        for c, exprs in facts._class_decorator_exprs.items():
            c.decorators = [d for d in (facts._decorator_name(e, c.scope) for e in exprs) if d]
        return facts

    def release(self) -> None:
        """Break the reference cycles the facts hold (functions and their bindings point at
        each other; cached queries point back at the facts), so that reference counting frees
        the module's tree when the analysis is dropped: the garbage collector walking every
        node of it again cost ~10% of a cold run. The facts are unusable afterwards."""
        for fn in self.functions:
            fn.__dict__.clear()
        for c in self.classes:
            c.__dict__.clear()
        self.__dict__.clear()

    @cached_property
    def _positions(self):
        # normally set by the engine (``Analysis.positions``: per statement); a lone use renders all
        from ..positions import positions_of

        return positions_of(self.module)

    def resolve_elsewhere(self, expr: cst.BaseExpression, at: cst.CSTNode):
        """The function in another module of the project that ``expr`` names
        (``project.ProjectFunction``), or None (no index, not found, or same module)."""
        from .elsewhere import resolve_elsewhere

        return resolve_elsewhere(self, expr, at)

    def code(self) -> str:
        """The module's code: the engine's copy of the source when it set one (the same text:
        libcst round-trips exactly), else rendered (a codegen of the whole file)."""
        return self.source_text if self.source_text is not None else self.module.code

    def spells(self, word: str) -> bool:
        """``word`` (no whitespace in it) may occur in some node's code: it occurs in the
        source text, or the text is unknown. A cheap test before rendering nodes to search them."""
        return self.source_text is None or word in self.source_text

    def line_of(self, node: cst.CSTNode) -> int:
        """1-based line of ``node`` (computed lazily; costs one render of the module)."""
        return self._positions[node].start.line

