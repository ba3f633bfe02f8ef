"""How a handler ends a run, and the report that says so."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Union

from ._errors import UsageError
from ._usage import Usage, UsageLike, usage_of
from ._work import Work


@dataclass(frozen=True)
class Outcome:
    """The run ended with ``trigger``; the workflow's rules read ``result``.

    ``usage`` is what the run used (a ``Usage``, or a mapping of its
    members), checked when the outcome is made: ``UsageError`` for a value
    the engine would refuse.
    """

    trigger: str
    result: Optional[dict[str, Any]] = None
    usage: Optional[Usage] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "usage", usage_of(self.usage))


@dataclass(frozen=True)
class Handoff:
    """A dynamic hand-off: the agent asks that agent ``to`` take the work.

    ``reason`` is the kind of hand-off (``capability_match``...), ``explanation``
    its words, ``task`` the task for the new agent, ``payload`` data it
    carries, ``return_control`` whether the result comes back to this agent,
    ``result`` this agent's result so far, and ``usage`` what this run used
    (checked as ``Outcome``'s).
    """

    to: str
    reason: str = ""
    explanation: str = ""
    task: str = ""
    payload: Optional[dict[str, Any]] = None
    return_control: bool = False
    result: Optional[dict[str, Any]] = field(default=None)
    usage: Optional[Usage] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "usage", usage_of(self.usage))


class Fail(Exception):
    """Raised by a handler: the run failed, with a ``kind`` the workflow's rules
    and retry policy see (``error.kind``), and whether a retry may help.
    ``usage`` is what the failed run used: it counts as any run's does.
    """

    def __init__(self, kind: str, message: str, retryable: bool = True, usage: UsageLike = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.usage = usage_of(usage)


class Reject(Exception):
    """Raised by a handler: the agent refuses the work, for ``reason``;
    ``usage`` is what it used deciding so.
    """

    def __init__(self, reason: str, usage: UsageLike = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage_of(usage)


Result = Union[Outcome, Handoff]
"""What a handler returns."""


def report_of(work: Work, value: Any = None, error: Optional[BaseException] = None) -> dict[str, Any]:
    """The report of ``work``'s run that returned ``value`` or raised ``error``.

    A ``Fail`` is an error of its kind, a ``Reject`` a rejection, any other
    exception a retryable error of kind ``error`` with its message, and a
    returned value that is neither an ``Outcome`` nor a ``Handoff`` a failed
    run of kind ``invalid_result`` that is not retried, as is a
    ``UsageError`` raised in the handler (usage the engine would refuse).
    The usage of the outcome, the hand-off, the ``Fail`` or the ``Reject``
    goes with the report. A final notice is settled with the trigger
    ``noticed``.
    """
    r: dict[str, Any] = {"instance_id": work.instance_id, "step": work.step, "agent": work.agent}
    usage: Optional[Usage] = None
    if work.notice:
        r["trigger"] = "noticed"
    elif isinstance(error, Reject):
        r["reject"] = error.reason
        usage = error.usage
    elif isinstance(error, Fail):
        r["error"] = _failure(error.message, error.retryable, error.kind)
        usage = error.usage
    elif isinstance(error, UsageError):
        r["error"] = _failure(f"baton: the handler's usage: {error}", False, "invalid_result")
    elif error is not None:
        r["error"] = _failure(str(error) or type(error).__name__, True, "")
    elif isinstance(value, Outcome) and value.trigger:
        r["trigger"] = value.trigger
        if value.result is not None:
            r["result"] = value.result
        usage = value.usage
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
        usage = value.usage
    else:
        what = "an Outcome without a trigger" if isinstance(value, Outcome) else (
            "a Handoff without `to`" if isinstance(value, Handoff) else type(value).__name__)
        r["error"] = _failure(f"baton: the handler returned {what}, not an Outcome or a Handoff", False, "invalid_result")
    if usage is not None and usage.to_dict():
        r["usage"] = usage.to_dict()
    return r


def _failure(message: str, retryable: bool, kind: str) -> dict[str, Any]:
    # The engine refuses an error without a message.
    f: dict[str, Any] = {"message": message or kind or "failed", "retryable": retryable}
    if kind and kind != "error":
        f["kind"] = kind
    return f
