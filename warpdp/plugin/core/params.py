"""The params base every family's parameters derive from: a frozen dataclass that checks
itself when it is made, so a params object that exists is a valid one."""
from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

P = TypeVar("P", bound="Params")


@dataclasses.dataclass(frozen=True)
class Params:
    """Base of ``PairHmmParams``, ``XdropParams``, ``SeedExtParams``.

    Subclasses are frozen dataclasses that override :meth:`validate`; it runs on construction
    and raises TypeError/ValueError naming the field.
    """

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise TypeError/ValueError naming the field that is out of range."""

    def replace(self: P, **changes: Any) -> P:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(field.name for field in dataclasses.fields(cls))

    @classmethod
    def from_kwargs(cls: type[P], params: P | None = None, /, **kwargs: Any) -> P:
        """``params`` (default: the defaults) with the given fields changed: how an entry point
        folds the keyword form (``xdrop(pairs, k=17, x=20)``) into its params object."""
        if params is None:
            unknown = sorted(set(kwargs) - set(cls.field_names()))
            if unknown:
                raise TypeError(f"unexpected keyword argument(s) for {cls.__name__}: {', '.join(unknown)}")
            return cls(**kwargs)
        if not isinstance(params, cls):
            raise TypeError(f"params must be {cls.__name__}, not {type(params).__name__}")
        if kwargs:
            raise TypeError(f"pass either params or keyword parameters ({', '.join(sorted(kwargs))}), not both")
        return params
