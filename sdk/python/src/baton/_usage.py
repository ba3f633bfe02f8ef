"""What a run used (tokens, cost) and what it says while it works, checked
as the engine checks them, so that a bad value is refused in the agent.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any, Mapping, Optional, Union

from ._errors import ReportError, UsageError


@dataclass(frozen=True)
class Usage:
    """What a run used, reported with the outcome that ends it.

    ``input_tokens`` and ``output_tokens`` are the tokens the run's model
    calls read and wrote (integers >= 0), ``cost`` what it cost in the unit
    the workflow's budgets use (a finite number >= 0), ``model`` the model
    that answered. Every member is optional. A bad value raises
    ``UsageError`` naming the member (``usage.cost``) when the ``Usage`` is
    made.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    model: str = ""

    def __post_init__(self) -> None:
        for name in ("input_tokens", "output_tokens"):
            v = getattr(self, name)
            # bool is an int to Python and never a number to JSON.
            if isinstance(v, bool) or not isinstance(v, int):
                raise UsageError("usage." + name, "must be an integer")
            if v < 0:
                raise UsageError("usage." + name, "must not be negative")
            if v >= 2**63:
                raise UsageError("usage." + name, "must be less than 2**63")
        c = self.cost
        if isinstance(c, bool) or not isinstance(c, (int, float)):
            raise UsageError("usage.cost", "must be a finite number")
        if not math.isfinite(c):
            raise UsageError("usage.cost", "must be a finite number")
        if c < 0:
            raise UsageError("usage.cost", "must not be negative")
        if not isinstance(self.model, str):
            raise UsageError("usage.model", "must be a string")

    def to_dict(self) -> dict[str, Any]:
        """The report's ``usage`` member: the members that are set."""
        out: dict[str, Any] = {}
        if self.input_tokens:
            out["input_tokens"] = self.input_tokens
        if self.output_tokens:
            out["output_tokens"] = self.output_tokens
        if self.cost:
            out["cost"] = self.cost
        if self.model:
            out["model"] = self.model
        return out


UsageLike = Union[Usage, Mapping[str, Any], None]
"""A ``Usage``, or a mapping of its members (``{"cost": 0.01}``), or nothing."""


def usage_of(v: UsageLike) -> Optional[Usage]:
    """``v`` as a checked ``Usage`` (``None`` for none); ``UsageError`` otherwise."""
    if v is None or isinstance(v, Usage):
        return v
    if not isinstance(v, Mapping):
        raise UsageError("usage", "must be a baton.Usage or a mapping of its members")
    for k in v:
        if k not in ("input_tokens", "output_tokens", "cost", "model"):
            raise UsageError(f"usage.{k}", "is unknown")
    return Usage(**v)


def progress_of(message: Optional[str], delta: Optional[str], data: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """The report's ``progress`` member; ``ReportError`` for a member the
    engine would refuse (data that is not a JSON object, say).
    """
    p: dict[str, Any] = {}
    for name, v in (("message", message), ("delta", delta)):
        if v is None:
            continue
        if not isinstance(v, str):
            raise ReportError("progress." + name, "must be a string")
        if v:
            p[name] = v
    if data is not None:
        if not isinstance(data, Mapping):
            raise ReportError("progress.data", "must be an object")
        try:
            json.dumps(data, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ReportError("progress.data", f"is not JSON: {exc}") from None
        if data:
            p["data"] = dict(data)
    return p
