"""The work an agent receives: a HANDOFF message, decoded and checked."""

from __future__ import annotations

import json
import math
from datetime import datetime
from typing import Any, Callable, Mapping, Optional

from ._errors import WorkError
from ._types import Answer
from ._usage import progress_of

ACTION_RUN = "run"
"""The action of work to do: the agent reports how it ended."""

ACTION_NOTICE = "notice"
"""The action of a final notice: there is nothing to run."""

ENGINE = "engine"
"""The ``from_agent`` of the work the engine dispatches itself."""


class Work:
    """One piece of work for an agent, as the engine sent it.

    Every member of the work JSON has an accessor: the run (``agent``,
    ``instance_id``, ``step``, ``attempt``), where it runs (``workflow``,
    ``version``, ``state``), what to do (``task_description``, ``input``,
    ``context``, ``previous_result``, ``constraints``), why (``reason``,
    ``explanation``, ``from_agent``, ``handoff_id``), a dynamic hand-off's
    ``payload`` and ``return_control``, a list run's ``item`` and
    ``index``, and the delivery's ``idempotency_key``, ``deadline``,
    ``heartbeat``, ``ack_wait``, ``traceparent``, ``priority``, ``ttl`` and
    ``timestamp``. ``raw`` is the whole message as decoded JSON.

    Inside an agent served by ``baton.serve``, ``defer()`` answers the
    engine's call at once (202) while the handler runs on, and
    ``progress()`` tells the server how the run is going.
    """

    __slots__ = (
        "raw", "action", "task_description", "input", "context", "previous_result",
        "constraints", "reason", "explanation", "return_control", "payload", "item",
        "index", "has_item", "workflow", "version", "instance_id", "step", "attempt",
        "state", "handoff_id", "idempotency_key", "deadline", "heartbeat", "ack_wait",
        "traceparent", "message_id", "conversation_id", "from_agent", "agent", "priority",
        "ttl", "timestamp", "_defer", "_progress",
    )

    raw: dict[str, Any]
    action: str
    task_description: str
    input: dict[str, Any]
    context: dict[str, Any]
    previous_result: dict[str, Any]
    constraints: dict[str, Any]
    reason: str
    explanation: str
    return_control: bool
    payload: Optional[dict[str, Any]]
    item: Any
    index: Optional[int]
    has_item: bool
    workflow: str
    version: int
    instance_id: str
    step: int
    attempt: int
    state: str
    handoff_id: str
    idempotency_key: str
    deadline: Optional[datetime]
    heartbeat: Optional[float]
    ack_wait: Optional[float]
    traceparent: str
    message_id: str
    conversation_id: str
    from_agent: str
    agent: str
    priority: str
    ttl: Optional[float]
    timestamp: Optional[datetime]
    _defer: Optional[Callable[[], None]]
    _progress: Optional[Callable[[dict[str, Any]], Answer]]

    @property
    def notice(self) -> bool:
        """Whether this is a final notice (``action`` is ``notice``): nothing to run."""
        return self.action == ACTION_NOTICE

    def defer(self) -> None:
        """Answer the engine's call now (202) and report when the handler returns.

        The handler keeps running on the agent server's pool; what it returns
        (or raises) is sent to the server's ``POST /v1/reports`` when it
        ends, before the run's deadline. Calling it twice does nothing more.
        Outside an agent server it raises ``RuntimeError``.
        """
        if self._defer is None:
            raise RuntimeError("baton: work.defer() works only inside an agent served by baton.serve")
        self._defer()

    def progress(
        self, message: Optional[str] = None, delta: Optional[str] = None, data: Optional[Mapping[str, Any]] = None,
    ) -> Answer:
        """Tells the server how the run is going, without ending it: a
        ``message`` for the person watching, ``delta`` the next piece of a
        streamed answer, ``data`` anything else (a JSON object).

        It posts a progress report to the server's ``POST /v1/reports``
        (the agent server's ``server`` and ``token``) and returns the
        engine's answer: ``{"ok": True}``, or ``ok`` false with ``code``
        ``stale`` once the run is over. It counts as a heartbeat. Call it
        from the handler while it runs, deferred or not. A member the engine
        would refuse raises ``ReportError``; a server that cannot be reached
        raises ``TransportError`` (progress is best effort: catch
        ``baton.BatonError`` to go on without it). Outside an agent server
        it raises ``RuntimeError``.
        """
        if self._progress is None:
            raise RuntimeError("baton: work.progress() works only inside an agent served by baton.serve")
        p = progress_of(message, delta, data)
        return self._progress({"instance_id": self.instance_id, "step": self.step, "agent": self.agent, "progress": p})

    def __repr__(self) -> str:
        return f"Work(agent={self.agent!r}, instance_id={self.instance_id!r}, step={self.step})"

    @classmethod
    def decode(cls, body: bytes | str, agent: str = "") -> Work:
        """Reads work from its JSON; a body that is not work raises ``WorkError``.

        ``agent`` is the agent it is for when the message does not say
        (its ``to_agent``).
        """
        try:
            msg = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise WorkError("work", f"is not JSON: {exc}") from None
        return cls.from_dict(msg, agent)

    @classmethod
    def from_dict(cls, msg: Any, agent: str = "") -> Work:
        """Reads work from its decoded JSON; see ``decode``."""
        if not isinstance(msg, dict):
            raise WorkError("work", "must be a JSON object")
        if msg.get("message_type") != "HANDOFF":
            raise WorkError("message_type", f"is {msg.get('message_type')!r}, not HANDOFF")
        c = _obj(msg, "", "content", required=True)
        md = _obj(msg, "", "metadata", required=True)
        w = cls.__new__(cls)
        w.raw = msg
        w._defer = None
        w._progress = None
        w.action = _str(c, "content.", "action")
        if w.action not in (ACTION_RUN, ACTION_NOTICE):
            raise WorkError("content.action", 'must be "run" or "notice"')
        w.instance_id = _str(md, "metadata.", "instance_id", required=True)
        w.step = _int(md, "metadata.", "step", required=True) or 0
        if w.step < 1:
            raise WorkError("metadata.step", "must be 1 or more")
        w.attempt = _int(md, "metadata.", "attempt") or 0
        w.version = _int(md, "metadata.", "version") or 0
        w.workflow = _str(md, "metadata.", "workflow")
        w.state = _str(md, "metadata.", "state")
        w.handoff_id = _str(md, "metadata.", "handoff_id")
        w.traceparent = _str(md, "metadata.", "traceparent")
        w.idempotency_key = _str(md, "metadata.", "idempotency_key") or f"{w.instance_id}:{w.step}"
        w.deadline = _time(md, "metadata.", "deadline")
        w.heartbeat = _seconds(md, "metadata.", "heartbeat")
        w.ack_wait = _seconds(md, "metadata.", "ack_wait")
        w.task_description = _str(c, "content.", "task_description")
        w.reason = _str(c, "content.", "reason")
        w.explanation = _str(c, "content.", "explanation")
        w.input = _obj(c, "content.", "input") or {}
        w.context = _obj(c, "content.", "context") or {}
        w.previous_result = _obj(c, "content.", "previous_result") or {}
        w.constraints = _obj(c, "content.", "constraints") or {}
        w.payload = _obj(c, "content.", "payload")
        rc = c.get("return_control", False)
        if not isinstance(rc, bool):
            raise WorkError("content.return_control", "must be a boolean")
        w.return_control = rc
        w.has_item = "item" in c
        w.item = c.get("item")
        w.index = _int(c, "content.", "index", required=w.has_item)
        w.message_id = _str(msg, "", "message_id")
        w.conversation_id = _str(msg, "", "conversation_id")
        w.from_agent = _str(msg, "", "from_agent")
        w.agent = _str(msg, "", "to_agent") or agent
        w.priority = _str(msg, "", "priority")
        w.ttl = _seconds(msg, "", "ttl")
        w.timestamp = _time(msg, "", "timestamp")
        return w


def _obj(src: Mapping[str, Any], prefix: str, key: str, required: bool = False) -> Optional[dict[str, Any]]:
    v = src.get(key)
    if v is None:
        if required:
            raise WorkError(prefix + key, "is required")
        return None
    if not isinstance(v, dict):
        raise WorkError(prefix + key, "must be an object")
    return v


def _str(src: Mapping[str, Any], prefix: str, key: str, required: bool = False) -> str:
    v = src.get(key)
    if v is None:
        v = ""
    if not isinstance(v, str):
        raise WorkError(prefix + key, "must be a string")
    if required and v == "":
        raise WorkError(prefix + key, "is required")
    return v


def _number(v: Any) -> Optional[float]:
    # bool is an int to Python and never a number to JSON.
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _int(src: Mapping[str, Any], prefix: str, key: str, required: bool = False) -> Optional[int]:
    v = src.get(key)
    if v is None:
        if required:
            raise WorkError(prefix + key, "is required")
        return None
    f = _number(v)
    if f is None or f != math.trunc(f) or abs(f) > 2**53:
        raise WorkError(prefix + key, "must be an integer")
    return int(f)


def _seconds(src: Mapping[str, Any], prefix: str, key: str) -> Optional[float]:
    v = src.get(key)
    if v is None:
        return None
    f = _number(v)
    if f is None or f < 0:
        raise WorkError(prefix + key, "must be a number of seconds")
    return f


def _time(src: Mapping[str, Any], prefix: str, key: str) -> Optional[datetime]:
    s = _str(src, prefix, key)
    if s == "":
        return None
    try:
        return parse_time(s)
    except ValueError:
        raise WorkError(prefix + key, "must be an RFC 3339 time") from None


def parse_time(s: str) -> datetime:
    """Reads an RFC 3339 time as Go writes it (``Z``, nanoseconds) into an aware datetime."""
    if s.endswith(("Z", "z")):
        s = s[:-1] + "+00:00"
    # Python before 3.11 reads at most six digits of a fraction.
    if "." in s:
        head, _, rest = s.partition(".")
        digits = len(rest) - len(rest.lstrip("0123456789"))
        frac, tz = rest[:digits], rest[digits:]
        if not frac:
            raise ValueError("no digits after the point")
        s = f"{head}.{frac[:6].ljust(6, '0')}{tz}"
    t = datetime.fromisoformat(s)
    if t.tzinfo is None:
        raise ValueError("no time zone")
    return t
