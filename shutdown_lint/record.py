"""Plain value classes for the modules every run imports.

A warm run (everything cached) is mostly interpreter start and imports, and ``dataclasses``
was the largest of them: ~8 ms to import (it imports ``inspect``, ``ast``, ``dis``...) plus
~1 ms to build each decorated class, about a sixth of the run. The classes on that path
(configuration, settings, discovery, results, the report) therefore write their ``__init__``
out and list their fields in ``FIELDS``; ``Record`` gives them field-wise ``__eq__`` and
``__repr__`` as a dataclass would, ``FrozenRecord`` immutability and a hash as well.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Record:
    __slots__ = ()
    #: the fields, in constructor order (what ``__eq__``, ``__repr__`` and ``as_dict`` see)
    FIELDS: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, f) == getattr(other, f) for f in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]  # mutable, like a dataclass without frozen=True

    def __repr__(self) -> str:
        fields = ", ".join(f"{f}={getattr(self, f)!r}" for f in self.FIELDS)
        return f"{self.__class__.__qualname__}({fields})"

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict, values copied the way ``dataclasses.asdict`` copies them."""
        return {f: plain(getattr(self, f)) for f in self.FIELDS}


class FrozenRecord(Record):
    __slots__ = ()

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {self.__class__.__qualname__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {self.__class__.__qualname__}")

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f) for f in self.FIELDS))

    def _set(self, **values: object) -> None:
        """For ``__init__``: set the fields past ``__setattr__``."""
        for name, value in values.items():
            object.__setattr__(self, name, value)


def plain(value: Any) -> Any:
    """``value`` with its lists, tuples and dicts copied, records as dicts (``as_dict``)."""
    if isinstance(value, Record):
        return value.as_dict()
    if type(value) is list:
        return [plain(v) for v in value]
    if type(value) is dict:
        return {plain(k): plain(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(plain(v) for v in value)
    return value
