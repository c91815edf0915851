"""Names: bindings visible from a scope, qualified names through imports and aliases,
the types a few calls return, and which same-module function a call resolves to."""

from __future__ import annotations

from typing import Iterator, Optional

from ..lazy_libcst import libcst as cst, on_first_read

from .model import ClassInfo, FunctionInfo, Scope, _Binding
from .vocabulary import FACTORY_TYPES, _BUILTINS, _canonical


# ``type(x) is self._NAME_TYPE`` (``cst.Name``) and the like, not ``isinstance``: libcst's node
# classes are ABCs, and an ``isinstance`` that fails is a Python call (``ABCMeta.__instancecheck__``);
# these run ~100,000 times on a large corpus. The same answers: these classes have no subclasses
# (tests/perf/test_walk_replay.py).
_UNASKED = object()


class Names:
    """Mixin of ``ModuleFacts``: name lookup, qualified names and call resolution."""

    def lookup(self, name: str, scope: Scope) -> Optional[_Binding]:
        """The binding of ``name`` visible from ``scope`` (innermost last assignment wins)."""
        cur = scope
        while cur is not None:
            b = cur.bindings.get(name)
            if b:
                return b[-1]
            cur = cur.scope
        b = self._module_bindings.get(name)
        if b:
            # prefer an import over later plain assignments of the same name at module level
            return b[-1]
        return None

    def is_builtin(self, name: str, at: cst.CSTNode) -> bool:
        return name in _BUILTINS and self.lookup(name, self.scope_of(at)) is None

    def module_import_name(self, qualified: str) -> Optional[str]:
        """The module-level local name bound by ``import <qualified> [as x]``
        (``aio`` for ``import asyncio as aio``), for fixes that must write
        ``<alias>.TaskGroup()``; ``None`` when the module has no such import."""
        for local, bindings in self._module_bindings.items():
            if any(b.kind == "import" and b.qualified == qualified for b in bindings):
                return local
        return None

    def qualified_name(self, expr: cst.BaseExpression, at: Optional[cst.CSTNode] = None) -> Optional[str]:
        """Dotted name that ``expr`` refers to, through imports and aliases.

        ``aio.gather`` -> ``asyncio.gather``; ``loop.create_task`` where ``loop`` came
        from ``asyncio.get_running_loop()`` -> ``asyncio.AbstractEventLoop.create_task``;
        ``exit`` -> ``builtins.exit``; a same-module function -> its qualname prefixed by
        ``<module>.``. ``None`` when unknown.
        """
        scope = self.scope_of(at if at is not None else expr)
        key = (id(expr), id(scope))
        if key in self._qn_cache:
            return self._qn_cache[key]
        result = self._qualified(expr, scope)
        if result is not None:
            result = _canonical(result)
        self._qn_cache[key] = result
        return result

    def _qualified(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        t = type(expr)
        if t is self._NAME_TYPE:
            ident = self._identifier(expr)
            b = self.lookup(ident, scope)
            if b is None:
                return f"builtins.{ident}" if ident in _BUILTINS else None
            if b.kind == "import":
                return b.qualified
            if b.kind == "def" or b.kind == "class":
                return f"<module>.{b.target.qualname}"  # type: ignore[union-attr]
            if b.kind == "value":
                return self._instance_type(b.target, b.scope)  # type: ignore[arg-type]
            return None
        if t is self._ATTRIBUTE_TYPE:
            base = expr.value
            if type(base) is self._NAME_TYPE and self._identifier(base) == "self" and scope is not None:
                cls = self._method_class(scope)
                if cls is not None:
                    attr = self._attribute_name(expr)
                    if attr in cls.methods:
                        return f"<module>.{cls.methods[attr].qualname}"
                    values = cls.attr_values.get(attr)
                    if values:
                        return self._instance_type(values[-1][0], values[-1][1])
                    return None
            inner = self._qualified(base, scope)
            if inner is None:
                return None
            return f"{_canonical(inner)}.{self._attribute_name(expr)}"
        if t is self._CALL_TYPE:
            return self._call_result_type(expr, scope)
        return self._constant_qualified(expr)

    def _method_class(self, scope: FunctionInfo) -> Optional[ClassInfo]:
        cur: Scope = scope
        while cur is not None:
            if cur.cls is not None:
                return cur.cls
            cur = cur.scope
        return None

    def _instance_type(self, value: cst.BaseExpression, scope: Scope) -> Optional[str]:
        t = type(value)
        if t is self._AWAIT_TYPE:
            value = self._await_operand(value)
            t = type(value)
        if t is self._CALL_TYPE:
            return self._call_result_type(value, scope)
        if t is self._NAME_TYPE or t is self._ATTRIBUTE_TYPE:
            if id(value) in self._typing_stack:
                return None
            self._typing_stack.add(id(value))
            try:
                return self._qualified(value, scope)
            finally:
                self._typing_stack.discard(id(value))
        return self._constant_qualified(value)

    # the node reads the code above makes (``AstFacts`` reads them on ``ast``; the node classes it
    # compares with, ``_NAME_TYPE`` and the like, are class attributes too: ``_CALL_TYPE`` is
    # ``TreeShape``'s)
    _NAME_TYPE: type = on_first_read(lambda: cst.Name)
    _ATTRIBUTE_TYPE: type = on_first_read(lambda: cst.Attribute)
    _AWAIT_TYPE: type = on_first_read(lambda: cst.Await)

    @staticmethod
    def _identifier(name: cst.Name) -> str:
        return name.value

    @staticmethod
    def _attribute_name(attribute: cst.Attribute) -> str:
        return attribute.attr.value

    @staticmethod
    def _await_operand(node: cst.Await) -> cst.BaseExpression:
        return node.expression

    @staticmethod
    def _constant_qualified(expr: cst.BaseExpression) -> Optional[str]:
        """The qualified name of an expression that is no name, attribute or call: none in libcst
        (``None``, ``True``, ``False`` are ``Name``s)."""
        return None

    @staticmethod
    def caught_types(handler) -> Optional[list]:
        """The exception types an ``except``/``except*`` handler names: a tuple's elements (a
        starred one by its value: ``except (*errors, OSError)``), else the expression itself
        (``except (E):`` is ``E``; a nested tuple stays one element); None for a bare ``except:``."""
        t = handler.type
        if t is None:
            return None
        return [el.value for el in t.elements] if type(t) is cst.Tuple else [t]

    def _call_result_type(self, call: cst.Call, scope: Scope) -> Optional[str]:
        if id(call) in self._typing_stack:
            return None
        self._typing_stack.add(id(call))
        try:
            callee = self._qualified(call.func, scope)
        finally:
            self._typing_stack.discard(id(call))
        if callee is None:
            return None
        callee = _canonical(callee)
        if callee in FACTORY_TYPES:
            return FACTORY_TYPES[callee]
        last = callee.rsplit(".", 1)[-1]
        if last[:1].isupper() and not callee.startswith("<module>."):
            return callee  # ``ThreadPoolExecutor()`` -> an instance of that class
        return None

    def _decorator_name(self, expr: cst.BaseExpression, scope: Scope) -> Optional[str]:
        if type(expr) is self._CALL_TYPE:
            expr = expr.func
        q = self._qualified(expr, scope)
        return _canonical(q) if q else None

    def call_name(self, call: cst.Call) -> Optional[str]:
        """Qualified name of the callee of ``call``."""
        # asked ~3 times per call on a large corpus (by several rules); the answer is
        # ``qualified_name``'s, which is cached too, but under a key that costs a scope lookup
        name = self._call_names.get(call, _UNASKED)
        if name is _UNASKED:
            name = self._call_names[call] = self.qualified_name(call.func, call)
        return name

    # ------------------------------------------------------------------ resolution
    def resolve_function(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[FunctionInfo]:
        """The same-module function/method that ``expr`` names (``f``, ``self.m``,
        ``Cls.m``), looking through ``functools.partial(f, ...)``."""
        scope = self.scope_of(at)
        if type(expr) is cst.Call:
            if self.qualified_name(expr.func, at) == "functools.partial" and expr.args:
                return self.resolve_function(expr.args[0].value, at)
            return None
        if type(expr) is cst.Name:
            b = self.lookup(expr.value, scope)
            if b is not None and b.kind == "def":
                return b.target  # type: ignore[return-value]
            return None
        if type(expr) is cst.Attribute:
            if type(expr.value) is cst.Name:
                if expr.value.value in ("self", "cls") and scope is not None:
                    cls = self._method_class(scope)
                    if cls is not None:
                        return cls.methods.get(expr.attr.value)
                b = self.lookup(expr.value.value, scope)
                if b is not None and b.kind == "class":
                    return b.target.methods.get(expr.attr.value)  # type: ignore[union-attr]
        return None

    def resolve_call(self, call: cst.Call) -> Optional[FunctionInfo]:
        """The same-module function that ``call`` calls, if any."""
        return self.resolve_function(call.func, call)

    def coroutine_target(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[FunctionInfo]:
        """For ``create_task(f(x))``-style arguments: the function whose call makes the
        coroutine."""
        if type(expr) is cst.Call:
            return self.resolve_function(expr.func, at)
        return None

    def callees(self, fn: FunctionInfo) -> Iterator[tuple[cst.Call, FunctionInfo]]:
        for call in fn.calls:
            target = self.resolve_call(call)
            if target is not None:
                yield call, target

    def module_alias(self, module: str) -> Optional[str]:
        """The local name under which ``import module`` (or ``import module as x``) is
        bound at module level, e.g. ``aio`` for ``import asyncio as aio``; None if absent."""
        for name, bindings in self._module_bindings.items():
            if any(b.kind == "import" and b.qualified == module for b in bindings):
                return name
        return None
