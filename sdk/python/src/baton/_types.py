"""The shapes of the HTTP API's answers, as typed dictionaries.

They are the JSON the server sends, decoded: plain ``dict`` objects at run
time, typed for a checker. A server newer than this package may add
members; they are kept.
"""

from __future__ import annotations

from typing import Any, Optional, TypedDict


class Summary(TypedDict):
    """What a start, a signal, a selection or a cancel answers."""

    id: str
    workflow: str
    version: int
    status: str


class Totals(TypedDict):
    """Usage totals: ``tokens`` is ``input_tokens`` + ``output_tokens``;
    ``cost`` is in the unit the workflow's budgets use.
    """

    input_tokens: int
    output_tokens: int
    tokens: int
    cost: float


class InstanceUsage(Totals):
    """What an instance's runs used: the totals (its child workflows'
    included), and each agent's under ``agents``; all zero when no run
    reported usage.
    """

    agents: dict[str, Totals]


class RunUsage(TypedDict, total=False):
    """What one run reported it used (an ``agent_reported`` event's ``usage``):
    the members it gave.
    """

    input_tokens: int
    output_tokens: int
    cost: float
    model: str


class Progress(TypedDict, total=False):
    """What a run said while it worked (an ``agent_progress`` event's
    ``progress``): a ``message``, the next ``delta`` of a streamed answer,
    ``data`` of the agent's own; the members it gave.
    """

    message: str
    delta: str
    data: dict[str, Any]


class Instance(TypedDict, total=False):
    """An instance: ``status`` is ``running``, ``waiting``, ``completed``,
    ``failed`` or ``cancelled``; ``outcome`` the terminal state of a
    completed one; ``error`` why one failed (``None`` otherwise); ``cancel_reason``
    the reason given with the cancel of a cancelled one; ``usage`` what its
    runs used; times in RFC 3339.
    """

    id: str
    workflow: str
    version: int
    status: str
    state: str
    step: int
    outcome: str
    error: Optional[str]
    cancel_reason: str
    usage: InstanceUsage
    context: dict[str, Any]
    created: str
    updated: str


class InstancePage(TypedDict):
    """A page of ``GET /v1/instances``: pass ``next`` as the next call's
    ``cursor``; it is ``None`` on the last page.
    """

    instances: list[Instance]
    next: Optional[str]


class Answer(TypedDict, total=False):
    """The engine's answer to a report: ``ok``, or a ``code`` (``stale``,
    ``invalid``, ``unknown_instance``) and a ``message``.
    """

    ok: bool
    code: str
    message: str


class Event(TypedDict, total=False):
    """One engine event of ``GET /v1/events``. ``type`` says which
    (``instance_started``, ``run_started``, ``agent_reported``,
    ``agent_progress``, ``state_changed``, ``limit_hit``, ``completed``,
    ``failed``, ``cancelled``...); the other members are set when the event
    has them: ``usage`` on an ``agent_reported`` event whose run reported
    usage, ``progress`` on an ``agent_progress`` event, ``limit``, ``count``
    and ``max`` on a ``limit_hit``.
    """

    id: int
    type: str
    instance: str
    workflow: str
    version: int
    step: int
    state: str
    agent: str
    time: str
    trigger: str
    rule: str
    outcome: str
    error: str
    reason: str
    limit: str
    count: int
    max: int
    usage: RunUsage
    progress: Progress
    data: str


class VersionInfo(TypedDict):
    """One version of a hosted workflow."""

    version: int
    hash: str
    file: str
    current: bool


class WorkflowInfo(TypedDict):
    """A hosted workflow and the versions the server runs."""

    name: str
    description: str
    versions: list[VersionInfo]


class Graph(TypedDict):
    """A workflow version's state diagram, in ``format`` (``mermaid`` or ``dot``)."""

    workflow: str
    version: int
    hash: str
    format: str
    graph: str


DeadLetter = TypedDict("DeadLetter", {
    "seq": int, "message_id": str, "type": str, "from": str, "to": str, "reason": str,
    "instance": str, "step": int, "key": str, "at": str, "attempts": int, "last_error": str,
    "content": dict[str, Any],
}, total=False)
"""Work that could not be delivered, and why (``reason``)."""


DeadLetterPage = TypedDict("DeadLetterPage", {"dead_letters": list[DeadLetter], "next": Optional[str]})
"""A page of ``GET /v1/dead-letters``, newest first."""
