"""What one walk records about a module's functions, classes and name bindings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Union

from ..lazy_libcst import libcst as cst

Scope = Union["FunctionInfo", None]  # None is the module scope


@dataclass(eq=False)
class ClassInfo:
    node: cst.ClassDef
    name: str
    qualname: str
    scope: Scope  # enclosing function, if the class is local
    outer_class: Optional["ClassInfo"]
    methods: dict[str, "FunctionInfo"] = field(default_factory=dict)
    #: ``self.x = <expr>`` assignments in any method: name -> value expressions
    attr_values: dict[str, list[tuple[cst.BaseExpression, "FunctionInfo"]]] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)
    #: declared attribute types: ``x: T`` in the class body, ``self.x: T`` in any method
    attr_annotations: dict[str, list[tuple[cst.BaseExpression, "FunctionInfo | None"]]] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)

    @property
    def has_async_methods(self) -> bool:
        return any(m.is_async for m in self.methods.values())


@dataclass(eq=False)
class FunctionInfo:
    node: cst.FunctionDef
    name: str
    qualname: str
    is_async: bool
    scope: Scope  # enclosing function (None at module level or directly in a class)
    cls: Optional[ClassInfo]  # the class this is a method of
    bindings: dict[str, list["_Binding"]] = field(default_factory=dict)
    calls: list[cst.Call] = field(default_factory=list)  # calls in this body, not in nested defs
    nested: dict[str, "FunctionInfo"] = field(default_factory=dict)
    decorators: list[str] = field(default_factory=list)
    #: parameter name -> its annotation (None when unannotated), every kind of parameter
    params: dict[str, Optional[cst.BaseExpression]] = field(default_factory=dict)

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        return f"<FunctionInfo {self.qualname}>"

    @property
    def is_method(self) -> bool:
        return self.cls is not None


@dataclass
class _Binding:
    kind: str  # "import" | "def" | "class" | "value" | "other"
    qualified: str | None = None  # for imports
    target: object = None  # FunctionInfo / ClassInfo / value expression
    scope: Scope = None
    #: ``x: T`` / ``x: T = v``: the declared type
    annotation: Optional[cst.BaseExpression] = None
    #: ``a, b = f(), g()``: the expression paired with this name (kind stays "other")
    unpacked: Optional[cst.BaseExpression] = None
    #: how many ``Name`` nodes spelling this name the walk had seen when it bound it: a use of
    #: the name whose index in ``ModuleFacts.name_nodes`` is larger comes after this binding
    order: int = -1

