"""The SDK's exceptions: the API's errors by code, and the agent server's."""

from __future__ import annotations

from typing import Optional


class BatonError(Exception):
    """The base of every exception this package raises on its own."""


class TransportError(BatonError):
    """The server could not be reached, or its answer could not be read."""


class WaitTimeout(BatonError, TimeoutError):
    """``Client.wait`` gave up before the instance finished."""


class WorkError(BatonError, ValueError):
    """A body that is not a work message: ``field`` names what is wrong.

    The agent server answers such a body 400 without calling any handler.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field} {reason}")
        self.field = field
        self.reason = reason


class ReportError(BatonError, ValueError):
    """A report the engine would refuse, caught before it is sent: ``field``
    names what is wrong (``usage.cost``, ``progress.data``) as the engine
    would, and ``reason`` says how.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"baton: {field} {reason}")
        self.field = field
        self.reason = reason


class UsageError(ReportError):
    """Usage the engine would refuse: a negative or non-integer token count,
    a cost that is negative or not a finite number, a model that is not a
    string, or a member it does not know. ``baton.Usage`` raises it when it
    is made, so that bad usage never leaves the agent.
    """


class APIError(BatonError):
    """An error answer of the HTTP API: ``{"error": {"code", "message", "field"}}``.

    ``status`` is the HTTP status, ``code`` the API's code (``invalid_field``,
    ``unknown_instance``, ``not_waiting``...), ``field`` the field, query
    parameter or header at fault when the server named one, and
    ``retry_after`` the seconds of a ``Retry-After`` header (``None``
    without one). Each status has its own subclass and the codes a program
    is likely to handle have theirs, so ``except baton.NotWaitingError``
    catches exactly that refusal.
    """

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if code else message)
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after = retry_after


class InvalidRequestError(APIError):
    """400: a malformed body or a wrong field (``invalid_json``, ``invalid_field``)."""


class UnauthorizedError(APIError):
    """401: no token, or not a valid one (``unauthorized``)."""


class ForbiddenError(APIError):
    """403: a cross-site request, or a ``Host`` the server does not answer."""


class NotFoundError(APIError):
    """404: no such route, workflow, version or instance."""


class UnknownWorkflowError(NotFoundError):
    """404 ``unknown_workflow``: the server hosts no such workflow."""


class UnknownVersionError(NotFoundError):
    """404 ``unknown_version``: the workflow has no such version on the server."""


class UnknownInstanceError(NotFoundError):
    """404 ``unknown_instance``: no instance has that id."""


class MethodNotAllowedError(APIError):
    """405 ``method_not_allowed``."""


class ConflictError(APIError):
    """409: the instance is not in a state that allows the request; nothing changed."""


class IdTakenError(ConflictError):
    """409 ``id_taken``: the id belongs to an instance of another workflow."""


class NotWaitingError(ConflictError):
    """409 ``not_waiting``: the instance does not wait for that signal."""


class FinishedError(ConflictError):
    """409 ``finished``: the instance has already ended."""


class RefusedError(ConflictError):
    """409 ``refused``: the hand-off checks refused a user selection."""


class NoActiveRunError(ConflictError):
    """409 ``no_active_run``: no run is under way to hand to another agent."""


class TooLargeError(APIError):
    """413 ``too_large``: the body is over 1 MiB."""


class UnsupportedMediaTypeError(APIError):
    """415 ``unsupported_media_type``."""


class UnavailableError(APIError):
    """503 ``unavailable``: try again (after ``retry_after`` seconds when set)."""


_BY_CODE: dict[str, type[APIError]] = {
    "unknown_workflow": UnknownWorkflowError,
    "unknown_version": UnknownVersionError,
    "unknown_instance": UnknownInstanceError,
    "id_taken": IdTakenError,
    "not_waiting": NotWaitingError,
    "finished": FinishedError,
    "refused": RefusedError,
    "no_active_run": NoActiveRunError,
}

_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    405: MethodNotAllowedError,
    409: ConflictError,
    413: TooLargeError,
    415: UnsupportedMediaTypeError,
    503: UnavailableError,
}


def api_error(
    status: int,
    code: str,
    message: str,
    field: Optional[str] = None,
    retry_after: Optional[float] = None,
) -> APIError:
    """The exception of an error answer: by its code, else by its status."""
    cls = _BY_CODE.get(code)
    if cls is None or _BY_STATUS.get(status) not in cls.__mro__:
        cls = _BY_STATUS.get(status, APIError)
    return cls(status, code, message, field, retry_after)
