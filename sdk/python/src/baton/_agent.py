"""The HTTP agent server: one function per agent, behind the agent protocol."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any, Callable, Mapping, Optional, Union

from ._client import Client
from ._errors import APIError, TransportError, UnavailableError, WorkError
from ._outcome import Fail, Reject, Result, report_of
from ._signature import SIGNATURE_HEADER, verify
from ._types import Answer
from ._work import Work

MAX_BODY = 1 << 20
"""The largest body, in bytes, the server reads or answers (1 MiB)."""

Handler = Callable[[Work], Result]
"""An agent: takes the work, returns an ``Outcome`` or a ``Handoff``, or raises
``Fail`` or ``Reject``.
"""


class _Call:
    """One call of the engine: answered with the report, or at once (202)
    once the handler calls ``work.defer()``.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.decided = threading.Event()
        self.deferred = False
        self.done = False
        self.report: Optional[bytes] = None

    def defer(self) -> None:
        with self.lock:
            if not self.done:
                self.deferred = True
        self.decided.set()


class AgentServer:
    """An HTTP server for agents: the engine POSTs each run's work to
    ``http://HOST:PORT/<agent>`` and gets the agent's report back.

    ``agents`` maps agent ids to handlers. With ``secret`` (the value of the
    variable the workflow's ``secret_env`` names) every call must carry a
    valid ``Baton-Signature`` (401 otherwise; checked in constant time). At
    most ``concurrency`` handlers run at once; further calls wait for one to
    finish. ``server`` and ``token`` (default ``$BATON_SERVER`` and
    ``$BATON_TOKEN``) are where deferred runs report, and where
    ``work.progress()`` sends progress. ``on_notice`` is called
    with each final notice. ``port`` 0 picks a free port (see ``port``).

    ``serve_forever`` serves until ``shutdown``; ``start`` serves on a thread
    of its own. ``close`` stops taking calls, lets the handlers under way
    finish and report, and returns.
    """

    def __init__(
        self,
        agents: Mapping[str, Handler],
        port: int = 8000,
        host: str = "127.0.0.1",
        secret: Union[str, bytes, None] = None,
        concurrency: int = 16,
        server: Optional[str] = None,
        token: Optional[str] = None,
        on_notice: Optional[Callable[[Work], None]] = None,
        logger: Optional[logging.Logger] = None,
    ) -> None:
        if not agents:
            raise ValueError("baton: serve at least one agent")
        for name, fn in agents.items():
            if not name or "/" in name or not callable(fn):
                raise ValueError(f"baton: agent {name!r} needs a name without '/' and a function")
        if concurrency < 1:
            raise ValueError("baton: concurrency must be 1 or more")
        self.agents = dict(agents)
        self.secret = secret
        self.on_notice = on_notice
        self.log = logger or logging.getLogger("baton")
        self._server_url = server
        self._token = token
        self._client: Optional[Client] = None
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="baton-agent")
        self._httpd = _HTTPServer((host, port), _handler_class(self))
        self._serving = threading.Event()
        self._stopped = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._close_lock = threading.Lock()
        self._closed = False

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self._httpd.server_address[1])

    def url(self, agent: str) -> str:
        """The ``url:`` to give ``agent`` in the workflow."""
        host = self._httpd.server_address[0]
        return f"http://{host}:{self.port}/{urllib.parse.quote(agent, safe='')}"

    def serve_forever(self) -> None:
        """Serves calls until ``shutdown`` (or ``close``) from another thread."""
        if self._stopped.is_set():
            return
        self._serving.set()
        try:
            self._httpd.serve_forever(poll_interval=0.1)
        finally:
            self._stopped.set()

    def start(self) -> AgentServer:
        """Serves on a thread of its own (which ``close`` waits for); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self.serve_forever, name="baton-agent-server", daemon=True)
            self._thread.start()
            self._serving.wait()
        return self

    def shutdown(self) -> None:
        """Stops taking calls; safe from any thread but the serving one, and twice."""
        if self._serving.is_set():
            self._httpd.shutdown()
        self._stopped.set()

    def close(self) -> None:
        """Stops taking calls, waits for the calls and handlers under way (and
        the reports of deferred runs), and releases the port. Safe twice.
        """
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self.shutdown()
        if self._thread is not None:
            self._thread.join()
        self._httpd.server_close()  # joins the threads of the calls under way
        self._pool.shutdown(wait=True)

    def __enter__(self) -> AgentServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # One call.

    def _client_for_reports(self) -> Client:
        if self._client is None:
            self._client = Client(self._server_url, self._token)
        return self._client

    def _run(self, fn: Handler, work: Work, call: _Call) -> None:
        try:
            value: Any = fn(work)
            report = report_of(work, value)
        except BaseException as exc:  # the run's failure, not the server's: the call is always answered
            if not isinstance(exc, (Fail, Reject)):
                self.log.warning("baton: agent %s failed on %s: %s", work.agent, work.idempotency_key, exc, exc_info=True)
            report = report_of(work, error=exc)
        body = _encode(work, report)
        with call.lock:
            call.done = True
            call.report = body
            deferred = call.deferred
        call.decided.set()
        if deferred:
            self._send_report(work, body)

    def _send_progress(self, report: dict[str, Any]) -> Answer:
        """Sends a run's progress report once: progress that comes late is
        worth nothing, so it is not sent again.
        """
        return self._client_for_reports().report(report)

    def _send_report(self, work: Work, body: bytes) -> None:
        """Reports a deferred run to the server, again while it cannot answer."""
        report = json.loads(body)
        limit = time.monotonic() + 30.0
        if work.deadline is not None:
            limit = max(limit, work.deadline.timestamp() - time.time() + time.monotonic())
        pause = 0.1
        while True:
            try:
                ans = self._client_for_reports().report(report)
                if ans.get("ok") or ans.get("code") != "unknown_instance":
                    if not ans.get("ok"):
                        self.log.warning("baton: the report of %s was answered %s: %s",
                                         work.idempotency_key, ans.get("code"), ans.get("message"))
                    return
                why = f"{ans.get('code')}: {ans.get('message')}"
            except (TransportError, UnavailableError) as exc:
                why = str(exc)
            except APIError as exc:
                self.log.error("baton: the report of %s was refused: %s", work.idempotency_key, exc)
                return
            if time.monotonic() + pause > limit:
                self.log.error("baton: gave up reporting %s: %s", work.idempotency_key, why)
                return
            time.sleep(pause)
            pause = min(pause * 2, 5.0)


def _encode(work: Work, report: dict[str, Any]) -> bytes:
    """The report's JSON; a result that JSON cannot carry, or one over 1 MiB,
    is a failed run of kind ``invalid_result``.
    """
    try:
        body = json.dumps(report, allow_nan=False).encode()
        if len(body) <= MAX_BODY:
            return body
        why = f"is {len(body)} bytes, more than {MAX_BODY}"
    except (TypeError, ValueError) as exc:
        why = f"is not JSON: {exc}"
    bad = {"instance_id": work.instance_id, "step": work.step, "agent": work.agent,
           "error": {"message": f"baton: the handler's report {why}", "retryable": False, "kind": "invalid_result"}}
    return json.dumps(bad).encode()


class _HTTPServer(ThreadingHTTPServer):
    # Calls under way are waited for on close, not abandoned.
    daemon_threads = False
    block_on_close = True


def _handler_class(srv: AgentServer) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        server_version = "baton-python/0.1"
        # HTTP/1.0: one call per connection, so that no idle connection
        # holds a thread that close would wait for.
        protocol_version = "HTTP/1.0"

        def log_message(self, format: str, *args: Any) -> None:
            srv.log.debug("baton: %s " + format, self.address_string(), *args)

        def _answer(self, status: int, body: Optional[bytes] = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Length", str(len(body or b"")))
                if body:
                    self.send_header("Content-Type", "application/json")
                self.end_headers()
                if body:
                    self.wfile.write(body)
            except OSError:
                pass  # the engine gave up on the call; the run is its to settle

        def _error(self, status: int, code: str, message: str, field: Optional[str] = None) -> None:
            e: dict[str, Any] = {"code": code, "message": message}
            if field:
                e["field"] = field
            self._answer(status, json.dumps({"error": e}).encode())

        def do_GET(self) -> None:
            self._error(405, "method_not_allowed", "agents take POST")

        def do_POST(self) -> None:
            name = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path.lstrip("/"))
            fn = srv.agents.get(name)
            if fn is None:
                self._error(404, "not_found", f"no agent {name!r} here")
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._error(411, "length_required", "the body needs a Content-Length")
                return
            if length < 0 or length > MAX_BODY:
                self._error(413, "too_large", "the body is larger than 1 MiB")
                return
            body = self.rfile.read(length)
            if srv.secret is not None and not verify(srv.secret, body, self.headers.get(SIGNATURE_HEADER)):
                self._error(401, "unauthorized", "the Baton-Signature does not match the body", SIGNATURE_HEADER)
                return
            try:
                work = Work.decode(body, name)
            except WorkError as exc:
                self._error(400, "invalid_field", f"not work: {exc}", exc.field)
                return
            if work.notice:
                if srv.on_notice is not None:
                    try:
                        srv.on_notice(work)
                    except Exception as exc:
                        srv.log.warning("baton: on_notice failed: %s", exc, exc_info=True)
                self._answer(200, _encode(work, report_of(work)))
                return
            call = _Call()
            work._defer = call.defer
            work._progress = srv._send_progress
            try:
                srv._pool.submit(srv._run, fn, work, call)
            except RuntimeError:  # the pool is shut down: the server is closing
                self._error(503, "unavailable", "the agent server is stopping")
                return
            call.decided.wait()
            with call.lock:
                deferred, report = call.deferred, call.report
            if deferred:
                self._answer(202)
            else:
                self._answer(200, report)

    return _Handler


def serve(
    agents: Mapping[str, Handler],
    port: int = 8000,
    host: str = "127.0.0.1",
    secret: Union[str, bytes, None] = None,
    concurrency: int = 16,
    server: Optional[str] = None,
    token: Optional[str] = None,
    on_notice: Optional[Callable[[Work], None]] = None,
    logger: Optional[logging.Logger] = None,
) -> None:
    """Serves ``agents`` over HTTP until SIGTERM or Ctrl-C, then stops cleanly.

    Each agent is served at ``http://HOST:PORT/<agent>``: that is its
    ``url:`` in the workflow. The arguments are ``AgentServer``'s. On SIGTERM
    or SIGINT it stops taking calls, lets the handlers under way finish and
    report, and returns. Call it from the main thread.
    """
    with AgentServer(agents, port=port, host=host, secret=secret, concurrency=concurrency,
                     server=server, token=token, on_notice=on_notice, logger=logger) as s:
        def stop(signum: int, frame: Optional[FrameType]) -> None:
            # shutdown waits for the serving loop, which runs on this very
            # thread: it must be asked from another one.
            threading.Thread(target=s.shutdown, name="baton-stop").start()

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            s.log.info("baton: serving %s on http://%s:%d", ", ".join(sorted(agents)), host, s.port)
            s.serve_forever()
        finally:
            for sig, h in previous.items():
                signal.signal(sig, h)
