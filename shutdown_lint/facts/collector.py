"""The one walk over a module's tree: what it does the same on libcst and on ``ast`` (``_Scopes``).

The libcst walk itself, ``_Collector``, is in ``cst_collector.py`` (imported on first libcst use:
the ast engine shares ``_Scopes`` and never needs libcst)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from .model import ClassInfo, FunctionInfo, Scope, _Binding

if TYPE_CHECKING:
    from .module import ModuleFacts



class _Scopes:
    """What the one walk does the same on libcst (``_Collector``) and on ``ast``
    (``ast_engine.facts._Collector``): the scope stack, bindings, functions, classes and calls.
    The walks read the nodes (a def's name, parameters, decorators) and pass what they read."""

    f: "ModuleFacts"
    scopes: list[FunctionInfo]
    classes: list[ClassInfo]
    kinds: list[str]
    _in_comp_for: bool

    @property
    def scope(self) -> Scope:
        return self.scopes[-1] if self.scopes else None

    def _in_class_body(self) -> Optional[ClassInfo]:
        return self.classes[-1] if self.kinds and self.kinds[-1] == "class" else None

    def bind(self, name: str, binding: _Binding) -> None:
        scope = binding.scope = self.scopes[-1] if self.scopes else None
        # a comprehension's target comes after the element that uses it: it counts as bound
        # before every use (it hides an outer binding, as before there were orders)
        binding.order = -1 if self._in_comp_for else len(self.f._names_by_value.get(name, ()))
        table = scope.bindings if scope is not None else self.f._module_bindings
        table.setdefault(name, []).append(binding)

    def _enter_function(self, node, name: str, is_async: bool, params: list, decorators: list) -> None:
        """A def: its ``FunctionInfo`` (``params``: (name, annotation) pairs in order; ``decorators``:
        the decorator expressions, resolved after the walk by ``build``), bound and made the scope."""
        cls = self._in_class_body()
        if cls is not None:
            qual = f"{cls.qualname}.{name}"
        elif self.scope is not None:
            qual = f"{self.scope.qualname}.<locals>.{name}"
        else:
            qual = name
        info = FunctionInfo(node=node, name=name, qualname=qual, is_async=is_async, scope=self.scope, cls=cls)
        for param, annotation in params:
            info.params[param] = annotation
        self.f._decorator_exprs[info] = decorators
        self.f.functions.append(info)
        self.f._function_of[node] = info
        if cls is not None:
            cls.methods.setdefault(name, info)
        else:
            if self.scope is not None:
                self.scope.nested.setdefault(name, info)
            self.bind(name, _Binding("def", target=info))
        self.scopes.append(info)
        self.kinds.append("function")

    def leave_FunctionDef(self, original_node) -> None:
        self.scopes.pop()
        self.kinds.pop()

    def _enter_class(self, node, name: str, decorators: list) -> None:
        """A class: its ``ClassInfo`` (``decorators`` as ``_enter_function``'s), bound and made the
        innermost definition."""
        outer = self._in_class_body()
        qual = f"{outer.qualname}.{name}" if outer else (
            f"{self.scope.qualname}.<locals>.{name}" if self.scope else name
        )
        info = ClassInfo(node=node, name=name, qualname=qual, scope=self.scope, outer_class=outer)
        self.f._class_decorator_exprs[info] = decorators
        self.f.classes.append(info)
        self.f._class_of[node] = info
        if outer is None:
            self.bind(name, _Binding("class", target=info))
        self.classes.append(info)
        self.kinds.append("class")

    def leave_ClassDef(self, original_node) -> None:
        self.classes.pop()
        self.kinds.pop()

    def visit_Call(self, node) -> None:
        f = self.f
        f.calls.append(node)
        scope = f._call_scope[node] = self.scopes[-1] if self.scopes else None
        if scope is not None:
            scope.calls.append(node)
        else:
            f.module_calls.append(node)
