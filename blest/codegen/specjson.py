"""The JSON round trip of the spec dataclasses kept in configs (MSSpec, DenseSpec): a format
number beside the fields, unknown formats and fields refused with a message naming the spec."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any, ClassVar

from blest.errors import ArgumentError

__all__ = ["JsonSpec"]


class JsonSpec:
    """Mixed into a frozen dataclass whose fields are its constructor's arguments."""

    FORMAT: ClassVar[int]

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.FORMAT, **asdict(self)}  # type: ignore[call-overload]

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, data: Any) -> Any:
        kind = cls.__name__
        if not isinstance(data, dict):
            raise ArgumentError(f"a {kind} is a JSON object, got {type(data).__name__}")
        data = dict(data)
        fmt = data.pop("format", cls.FORMAT)
        if fmt != cls.FORMAT:
            raise ArgumentError(f"unknown {kind} format {fmt!r} (this blest reads {cls.FORMAT})")
        unknown = set(data) - {f.name for f in fields(cls)}  # type: ignore[arg-type]
        if unknown:
            raise ArgumentError(f"unknown {kind} fields: {sorted(unknown)}")
        return cls(**data)
