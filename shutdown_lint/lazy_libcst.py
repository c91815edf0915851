"""libcst, imported on its first use rather than when our modules are imported.

Importing libcst costs ~0.15 CPU-s per process (``python -X importtime``): about half of a
one-file run (a pre-commit hook), and a run whose files all go through the ast engine
(``shutdown_lint/ast_engine``) never needs it. So the engine and the rules write::

    from shutdown_lint.lazy_libcst import libcst as cst      # instead of: import libcst as cst

and use ``cst.Call``, ``cst.CSTVisitor`` ... as usual: the first such read imports libcst and
returns the real object (``cst.Call is libcst.Call``), later reads are plain attribute reads.
Nothing handed to libcst is a stand-in. What runs when a module is imported must not read
``cst.<name>``: a class based on ``cst.CSTVisitor`` is made inside a function (the rules'
visitors) or lives in a module imported where a libcst tree is walked (``rule_visitor.py``,
``facts/cst_collector.py``); tables of node types are cached functions
(``traversal.trivia_types``) or ``on_first_read`` class attributes. On the ast path, a helper
that takes either tree tests ``ast``'s types first. ``tests/engine/test_lazy_libcst.py`` checks
that an ast-only run leaves libcst out of ``sys.modules``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Callable


class LazyModule:
    """The module ``name``, imported on the first read of one of its attributes."""

    def __init__(self, name: str) -> None:
        self._lazy_name = name

    def __getattr__(self, attr: str) -> Any:  # only called for names not read before
        if attr.startswith("__"):  # probes by copy, pickle, inspect: not a libcst name
            raise AttributeError(attr)
        value = getattr(importlib.import_module(self._lazy_name), attr)
        setattr(self, attr, value)
        return value

    def __repr__(self) -> str:
        return f"<lazily imported module {self._lazy_name!r}>"


class on_first_read:
    """A class attribute that ``make()`` computes on its first read (``make`` reads libcst); the
    value then replaces this descriptor on the class that defines it, so later reads are plain
    class attribute reads. For the node-type tables of the facts mixins that ``AstFacts``
    shares (it sets its own, ``ast``'s, and never reads these)::

        _CALL_TYPE: type = on_first_read(lambda: cst.Call)
    """

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name

    def __get__(self, instance: object, cls: type | None = None) -> Any:
        value = self.make()
        setattr(self.owner, self.name, value)
        return value


if TYPE_CHECKING:
    import libcst
    import libcst.metadata as libcst_metadata
else:
    libcst = LazyModule("libcst")
    libcst_metadata = LazyModule("libcst.metadata")
