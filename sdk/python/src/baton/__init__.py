"""Baton in Python: agents served over HTTP, and a client of the server's API.

An agent is a function that takes a ``Work`` and returns an ``Outcome`` (or a
``Handoff``), or raises ``Fail`` or ``Reject``; ``serve`` puts agents behind
the HTTP agent protocol, each at ``http://HOST:PORT/<agent>``::

    import baton

    def sorter(work: baton.Work) -> baton.Outcome:
        text = work.input.get("text", "")
        return baton.Outcome("sorted", {"urgent": "down" in text})

    baton.serve({"sorter": sorter}, port=9000, secret="s3cret")

A handler reports what its run used with ``usage=baton.Usage(...)`` on its
outcome, and says how it is going with ``work.progress(message, delta=...)``.

``Client`` starts, follows and steers instances through the HTTP API of
``wfrun serve``::

    client = baton.Client()                 # $BATON_SERVER, $BATON_TOKEN
    started = client.start("triage", {"text": "the site is down"})
    for event in client.events(instance=started["id"]):
        print(event["type"], event.get("state"))

The package uses the standard library only.
"""

from ._agent import MAX_BODY, AgentServer, Handler, serve
from ._client import DEFAULT_SERVER, FINISHED, Client, EventStream
from ._errors import (
    APIError, BatonError, ConflictError, FinishedError, ForbiddenError, IdTakenError,
    InvalidRequestError, MethodNotAllowedError, NoActiveRunError, NotFoundError,
    NotWaitingError, RefusedError, ReportError, TooLargeError, TransportError, UnauthorizedError,
    UnavailableError, UnknownInstanceError, UnknownVersionError, UnknownWorkflowError,
    UnsupportedMediaTypeError, UsageError, WaitTimeout, WorkError,
)
from ._outcome import Fail, Handoff, Outcome, Reject, Result, report_of
from ._signature import SIGNATURE_HEADER, sign, verify
from ._types import (
    Answer, DeadLetter, DeadLetterPage, Event, Graph, Instance, InstancePage, InstanceUsage,
    Progress, RunUsage, Summary, Totals, VersionInfo, WorkflowInfo,
)
from ._usage import Usage
from ._work import ACTION_NOTICE, ACTION_RUN, ENGINE, Work

__version__ = "0.1.0"

__all__ = [
    "ACTION_NOTICE", "ACTION_RUN", "APIError", "AgentServer", "Answer", "BatonError", "Client",
    "ConflictError", "DEFAULT_SERVER", "DeadLetter", "DeadLetterPage", "ENGINE", "Event",
    "EventStream", "FINISHED", "Fail", "FinishedError", "ForbiddenError", "Graph", "Handler",
    "Handoff", "IdTakenError", "Instance", "InstancePage", "InstanceUsage", "InvalidRequestError",
    "MAX_BODY", "MethodNotAllowedError", "NoActiveRunError", "NotFoundError", "NotWaitingError",
    "Outcome", "Progress", "RefusedError", "Reject", "ReportError", "Result", "RunUsage",
    "SIGNATURE_HEADER", "Summary", "TooLargeError", "Totals", "TransportError",
    "UnauthorizedError", "UnavailableError", "UnknownInstanceError", "UnknownVersionError",
    "UnknownWorkflowError", "UnsupportedMediaTypeError", "Usage", "UsageError", "VersionInfo",
    "WaitTimeout", "Work", "WorkError", "WorkflowInfo", "report_of", "serve", "sign", "verify",
]
