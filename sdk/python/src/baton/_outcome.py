"""How a handler ends a run, and the report that says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ._work import Work


@dataclass(frozen=True)
class Outcome:
    """The run ended with ``trigger``; the workflow's rules read ``result``."""

    trigger: str
    result: Optional[dict[str, Any]] = None


@dataclass(frozen=True)
class Handoff:
    """A dynamic hand-off: the agent asks that agent ``to`` take the work.

    ``reason`` is the kind of hand-off (``capability_match``...), ``explanation``
    its words, ``task`` the task for the new agent, ``payload`` data it
    carries, ``return_control`` whether the result comes back to this agent,
    and ``result`` this agent's result so far.
    """

    to: str
    reason: str = ""
    explanation: str = ""
    task: str = ""
    payload: Optional[dict[str, Any]] = None
    return_control: bool = False
    result: Optional[dict[str, Any]] = field(default=None)


class Fail(Exception):
    """Raised by a handler: the run failed, with a ``kind`` the workflow's rules
    and retry policy see (``error.kind``), and whether a retry may help.
    """

    def __init__(self, kind: str, message: str, retryable: bool = True) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable


class Reject(Exception):
    """Raised by a handler: the agent refuses the work, for ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


Result = Union[Outcome, Handoff]
"""What a handler returns."""


def report_of(work: Work, value: Any = None, error: Optional[BaseException] = None) -> dict[str, Any]:
    """The report of ``work``'s run that returned ``value`` or raised ``error``.

    A ``Fail`` is an error of its kind, a ``Reject`` a rejection, any other
    exception a retryable error of kind ``error`` with its message, and a
    returned value that is neither an ``Outcome`` nor a ``Handoff`` a failed
    run of kind ``invalid_result`` that is not retried. A final notice is
    settled with the trigger ``noticed``.
    """
    r: dict[str, Any] = {"instance_id": work.instance_id, "step": work.step, "agent": work.agent}
    if work.notice:
        r["trigger"] = "noticed"
    elif isinstance(error, Reject):
        r["reject"] = error.reason
    elif isinstance(error, Fail):
        r["error"] = _failure(error.message, error.retryable, error.kind)
    elif error is not None:
        r["error"] = _failure(str(error) or type(error).__name__, True, "")
    elif isinstance(value, Outcome) and value.trigger:
        r["trigger"] = value.trigger
        if value.result is not None:
            r["result"] = value.result
    elif isinstance(value, Handoff) and value.to:
        h: dict[str, Any] = {"to": value.to}
        for k in ("reason", "explanation", "task"):
            if getattr(value, k):
                h[k] = getattr(value, k)
        if value.payload is not None:
            h["payload"] = value.payload
        if value.return_control:
            h["return_control"] = True
        r["handoff"] = h
        if value.result is not None:
            r["result"] = value.result
    else:
        what = "an Outcome without a trigger" if isinstance(value, Outcome) else (
            "a Handoff without `to`" if isinstance(value, Handoff) else type(value).__name__)
        r["error"] = _failure(f"baton: the handler returned {what}, not an Outcome or a Handoff", False, "invalid_result")
    return r


def _failure(message: str, retryable: bool, kind: str) -> dict[str, Any]:
    # The engine refuses an error without a message.
    f: dict[str, Any] = {"message": message or kind or "failed", "retryable": retryable}
    if kind and kind != "error":
        f["kind"] = kind
    return f
