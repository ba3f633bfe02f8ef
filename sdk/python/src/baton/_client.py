"""A client of the HTTP API of ``wfrun serve``."""

from __future__ import annotations

import builtins
import http.client
import json
import os
import socket
import time
import urllib.parse
from typing import Any, Iterator, Mapping, Optional, cast

from ._errors import APIError, TransportError, UnavailableError, WaitTimeout, api_error
from ._types import (
    Answer, DeadLetterPage, Event, Graph, Instance, InstancePage, Summary, WorkflowInfo,
)

DEFAULT_SERVER = "http://127.0.0.1:8080"
"""The server a client talks to when neither its argument nor ``BATON_SERVER`` names one."""

FINISHED = frozenset({"completed", "failed", "cancelled"})
"""The statuses, and the event types, of an instance that has ended."""

_USER_AGENT = "baton-python/0.1"


def _q(s: str) -> str:
    return urllib.parse.quote(s, safe="")


class Client:
    """A client of Baton's HTTP API (``wfrun serve``).

    ``server`` defaults to ``$BATON_SERVER``, else ``http://127.0.0.1:8080``;
    ``token`` to ``$BATON_TOKEN`` (sent as ``Authorization: Bearer``).
    ``timeout`` bounds each request, in seconds. An error answer raises the
    ``APIError`` subclass of its code or status; a server that cannot be
    reached raises ``TransportError``. A client keeps no connection open
    between calls and may be shared by threads.
    """

    def __init__(self, server: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0) -> None:
        server = server or os.environ.get("BATON_SERVER") or DEFAULT_SERVER
        u = urllib.parse.urlsplit(server)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError(f"baton: server {server!r} is not an http or https URL")
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._base = u.path.rstrip("/")
        self.server = server
        self._token = token if token is not None else os.environ.get("BATON_TOKEN") or None
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"Client({self.server!r})"

    # Instances.

    def start(
        self,
        workflow: str,
        input: Optional[Mapping[str, Any]] = None,
        id: Optional[str] = None,
        version: Optional[int] = None,
    ) -> Summary:
        """Starts an instance of ``workflow`` with ``input``.

        With ``id``, starting again with the same input returns the instance
        the first start made, so a start can be retried safely; other input
        raises ``ConflictError``. ``version`` picks a version the server keeps.
        """
        body: dict[str, Any] = {"input": dict(input or {})}
        if id is not None:
            body["id"] = id
        if version is not None:
            body["version"] = version
        return cast(Summary, self._call("POST", f"/v1/workflows/{_q(workflow)}/instances", body=body))

    def list(
        self,
        workflow: Optional[str] = None,
        status: Optional[str] = None,
        state: Optional[str] = None,
        limit: Optional[int] = None,
        cursor: Optional[str] = None,
    ) -> InstancePage:
        """One page of instances, newest first: pass its ``next`` as ``cursor``
        for the following page (``None`` on the last page).
        """
        q = {"workflow": workflow, "status": status, "state": state, "limit": limit, "cursor": cursor}
        return cast(InstancePage, self._call("GET", "/v1/instances", query=q))

    def instances(
        self,
        workflow: Optional[str] = None,
        status: Optional[str] = None,
        state: Optional[str] = None,
        page_size: Optional[int] = None,
    ) -> Iterator[Instance]:
        """Every instance the filters select, newest first, page by page."""
        cursor: Optional[str] = None
        while True:
            page = self.list(workflow, status, state, page_size, cursor)
            yield from page["instances"]
            cursor = page.get("next")
            if not cursor:
                return

    def get(self, id: str) -> Instance:
        """The instance ``id``; ``UnknownInstanceError`` when there is none."""
        return cast(Instance, self._call("GET", f"/v1/instances/{_q(id)}"))

    def history(self, id: str) -> builtins.list[dict[str, Any]]:
        """The instance's history, in the JSON ``wfrun replay`` reads."""
        return cast("builtins.list[dict[str, Any]]", self._call("GET", f"/v1/instances/{_q(id)}/history"))

    def signal(self, id: str, name: str, data: Optional[Mapping[str, Any]] = None) -> Summary:
        """Sends the signal ``name`` (with ``data``) to an instance waiting for it;
        ``NotWaitingError`` when it is not.
        """
        body = {"data": dict(data)} if data is not None else {}
        return cast(Summary, self._call("POST", f"/v1/instances/{_q(id)}/signals/{_q(name)}", body=body))

    def select(self, id: str, agent: str, explanation: Optional[str] = None) -> Summary:
        """Hands the instance's current step to ``agent``, one the workflow marks
        ``selectable``: ``RefusedError`` or ``NoActiveRunError`` otherwise.
        """
        body: dict[str, Any] = {"agent": agent}
        if explanation is not None:
            body["explanation"] = explanation
        return cast(Summary, self._call("POST", f"/v1/instances/{_q(id)}/select", body=body))

    def cancel(self, id: str, reason: Optional[str] = None) -> Summary:
        """Cancels the instance, for ``reason`` (kept as its ``cancel_reason``);
        ``FinishedError`` when it had already ended."""
        body = None if reason is None else {"reason": reason}
        return cast(Summary, self._call("POST", f"/v1/instances/{_q(id)}/cancel", body=body))

    def report(self, report: Mapping[str, Any]) -> Answer:
        """Sends an agent's report (``POST /v1/reports``) and returns the engine's
        answer: ``{"ok": True}``, or ``ok`` false with ``code`` ``stale``,
        ``invalid`` or ``unknown_instance``.
        """
        return cast(Answer, self._call("POST", "/v1/reports", body=dict(report)))

    def events(
        self,
        workflow: Optional[str] = None,
        instance: Optional[str] = None,
        last_event_id: Optional[str] = None,
        retries: int = 10,
        read_timeout: float = 60.0,
    ) -> EventStream:
        """Follows the server's events (filtered by workflow and instance).

        The stream is open when this returns: the events from then on come
        in order. With ``last_event_id`` the server first sends the events
        after it that it still keeps. A stream that drops is opened again
        with the id of the last event received (``Last-Event-ID``), up to
        ``retries`` times in a row; a stream idle for ``read_timeout``
        seconds (the server sends a comment every 15) counts as dropped.
        Close it, or use it in a ``with`` block.
        """
        q = {"workflow": workflow, "instance": instance}
        return EventStream(self, q, last_event_id, retries, read_timeout)

    def wait(self, id: str, timeout: Optional[float] = None) -> Instance:
        """Waits until the instance ends and returns it (completed, failed or
        cancelled). ``WaitTimeout`` after ``timeout`` seconds when given.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.events(instance=id) as stream:
            stream.deadline = deadline
            # The stream is open before the first look, so that an end
            # between the two is seen in one or the other.
            inst = self.get(id)
            if inst.get("status") in FINISHED:
                return inst
            reconnects = stream.reconnects
            for ev in stream:
                if ev.get("type") in FINISHED or ev.get("type") == "gap" or stream.reconnects != reconnects:
                    reconnects = stream.reconnects
                    inst = self._settled(id, deadline)
                    if inst.get("status") in FINISHED:
                        return inst
        inst = self.get(id)
        if inst.get("status") in FINISHED:
            return inst
        # The stream ended (the server closed it for good) before the
        # instance did: follow it again.
        return self.wait(id, None if deadline is None else max(0.0, deadline - time.monotonic()))

    def _settled(self, id: str, deadline: Optional[float]) -> Instance:
        # The event of an end may overtake the instance's answer by a moment.
        pause = 0.005
        for _ in range(12):
            inst = self.get(id)
            if inst.get("status") in FINISHED or (deadline is not None and time.monotonic() >= deadline):
                return inst
            time.sleep(pause)
            pause = min(pause * 2, 0.5)
        return inst

    # Workflows and dead letters.

    def workflows(self) -> builtins.list[WorkflowInfo]:
        """The hosted workflows and their versions."""
        return cast("builtins.list[WorkflowInfo]", self._call("GET", "/v1/workflows")["workflows"])

    def graph(self, name: str, format: str = "mermaid", version: Optional[int] = None) -> Graph:
        """The state diagram of a workflow version, in ``mermaid`` or ``dot``."""
        q = {"format": format, "version": version}
        return cast(Graph, self._call("GET", f"/v1/workflows/{_q(name)}/graph", query=q))

    def agents(self) -> builtins.list[dict[str, Any]]:
        """Every agent of every hosted workflow: kind, queue, in-flight work, dead letters, liveness."""
        return cast("builtins.list[dict[str, Any]]", self._call("GET", "/v1/agents")["agents"])

    def dead_letters(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> DeadLetterPage:
        """One page of dead letters, newest first (``next`` as for ``list``)."""
        return cast(DeadLetterPage, self._call("GET", "/v1/dead-letters", query={"limit": limit, "cursor": cursor}))

    # Plumbing.

    def _path(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        p = self._base + path
        if query:
            items = {k: str(v) for k, v in query.items() if v is not None}
            if items:
                p += "?" + urllib.parse.urlencode(items)
        return p

    def _headers(self, extra: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        h = {"User-Agent": _USER_AGENT, "Accept": "application/json"}
        if self._token:
            h["Authorization"] = "Bearer " + self._token
        if extra:
            h.update(extra)
        return h

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._scheme == "https":
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def _open(
        self, method: str, path: str, body: Optional[bytes], headers: Mapping[str, str], timeout: Optional[float],
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse, Optional[socket.socket]]:
        """Sends a request; an error answer raises its APIError. The socket is
        returned too: the connection lets go of it when the answer is the
        connection's last (HTTP/1.0, Connection: close).
        """
        conn = self._connection(timeout)
        try:
            conn.request(method, path, body=body, headers=dict(headers))
            sock = conn.sock
            resp = conn.getresponse()
            if resp.status >= 400:
                raise _error_of(resp.status, resp.getheader("Retry-After"), resp.read())
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise TransportError(f"baton: {method} {self.server}{path}: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return conn, resp, sock

    def _call(
        self, method: str, path: str, query: Optional[Mapping[str, Any]] = None, body: Optional[Any] = None,
    ) -> Any:
        data = None
        extra = {}
        if body is not None:
            data = json.dumps(body).encode()
            extra["Content-Type"] = "application/json"
        p = self._path(path, query)
        conn, resp, _ = self._open(method, p, data, self._headers(extra), self.timeout)
        try:
            raw = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            raise TransportError(f"baton: {method} {self.server}{p}: {exc}") from exc
        finally:
            conn.close()
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise TransportError(f"baton: {method} {self.server}{p} answered {resp.status} with a body that is not JSON") from exc


def _error_of(status: int, retry_after: Optional[str], raw: bytes) -> APIError:
    code, message, field = "", raw.decode("utf-8", "replace").strip() or f"HTTP {status}", None
    try:
        e = json.loads(raw)["error"]
        code, message, field = str(e.get("code", "")), str(e.get("message", "")), e.get("field") or None
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    after = None
    if retry_after:
        try:
            after = float(retry_after)
        except ValueError:
            pass
    return api_error(status, code, message, field, after)


class EventStream:
    """The server's events as an iterator, resumed where it dropped.

    ``last_event_id`` is the id of the last event received; ``reconnects``
    counts the times the stream was opened again. An ``end`` event (the
    server is done with the stream) ends the iteration. ``deadline`` (a
    ``time.monotonic()`` value) makes the iteration raise ``WaitTimeout``
    once it has passed.
    """

    def __init__(
        self, client: Client, query: Mapping[str, Any], last_event_id: Optional[str], retries: int, read_timeout: float,
    ) -> None:
        self._client = client
        self._path = client._path("/v1/events", query)
        self.last_event_id = last_event_id
        self.reconnects = 0
        self.deadline: Optional[float] = None
        self._retries = retries
        self._read_timeout = read_timeout
        self._conn: Optional[http.client.HTTPConnection] = None
        self._resp: Optional[http.client.HTTPResponse] = None
        self._sock: Optional[socket.socket] = None
        self._closed = False
        self._connected_at = 0.0
        self._got_event = False
        self._pause = 0.05
        self._connect()

    def _connect(self) -> None:
        headers = {"Accept": "text/event-stream"}
        if self.last_event_id is not None:
            headers["Last-Event-ID"] = self.last_event_id
        self._conn, self._resp, self._sock = self._client._open(
            "GET", self._path, None, self._client._headers(headers), self._client.timeout)
        self._connected_at = time.monotonic()
        self._got_event = False

    def _reconnect(self) -> None:
        self._drop()
        pause = 0.05
        for attempt in range(self._retries + 1):
            self._check_deadline()
            try:
                self._connect()
                self.reconnects += 1
                return
            except (TransportError, UnavailableError):
                if attempt == self._retries:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise WaitTimeout("baton: gave up waiting")

    def _drop(self) -> None:
        if self._resp is not None:
            self._resp.close()
        if self._conn is not None:
            self._conn.close()
        self._conn = self._resp = self._sock = None

    def close(self) -> None:
        """Closes the stream; the iteration ends."""
        self._closed = True
        self._drop()

    def __enter__(self) -> EventStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> EventStream:
        return self

    def __next__(self) -> Event:
        while not self._closed:
            ev = self._read()
            if ev is not None:
                self._got_event = True
                self._pause = 0.05
                if ev.get("type") == "end":
                    self.close()
                    break
                return ev
            if self._closed:
                break
            if not self._got_event and time.monotonic() - self._connected_at < 1.0:
                # A stream that ends as soon as it opens, again and again, is
                # opened again less and less often.
                self._check_deadline()
                time.sleep(self._pause)
                self._pause = min(self._pause * 2, 2.0)
            self._reconnect()
        raise StopIteration

    def _read(self) -> Optional[Event]:
        """The next event; None when the stream dropped."""
        name, data, ev_id = "", [], None
        while True:
            self._check_deadline()
            # close() may run on another thread: read through locals.
            resp, sock = self._resp, self._sock
            if resp is None or sock is None:
                return None
            timeout = self._read_timeout
            if self.deadline is not None:
                timeout = max(0.001, min(timeout, self.deadline - time.monotonic()))
            try:
                sock.settimeout(timeout)
                line = resp.readline()
            except (socket.timeout, TimeoutError):
                self._check_deadline()
                return None
            except (OSError, http.client.HTTPException, ValueError, AttributeError):
                # AttributeError: http.client's answer closed under its reader.
                return None
            if not line:
                return None
            text = line.decode("utf-8", "replace").rstrip("\r\n")
            if text == "":
                if not data and ev_id is None:
                    name = ""
                    continue
                if ev_id is not None:
                    self.last_event_id = ev_id
                if not data:
                    name, ev_id = "", None
                    continue
                return _event(name, "\n".join(data))
            if text.startswith(":"):
                continue
            key, _, value = text.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            elif key == "id" and "\0" not in value:
                ev_id = value


def _event(name: str, data: str) -> Event:
    try:
        v = json.loads(data)
    except ValueError:
        v = None
    ev: dict[str, Any] = v if isinstance(v, dict) else {"data": data}
    if "type" not in ev:
        ev["type"] = name or "message"
    return cast(Event, ev)
