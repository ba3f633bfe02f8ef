"""The API client against a real ``wfrun serve`` with a token file: every
route, errors as typed exceptions, and an event stream that drops and is
resumed with ``Last-Event-ID``.
"""

from __future__ import annotations

import os
import threading
import time
import unittest
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional
from unittest import mock

import baton
from harness import Proxy, Server, free_addr

TOKEN = "client-token"

WORKFLOW = """
workflow: pyclient
version: 1
description: the client suite's workflow
initial: WORKING
agents:
  worker: {{url: "{agents}/worker"}}
  helper: {{url: "{agents}/helper", selectable: true}}
states:
  WORKING: {{agent: worker, timeout: 60s}}
  WAITING: {{wait: {{signals: [go]}}, timeout: 1h}}
  DONE: {{terminal: true}}
rules:
  - {{id: to_wait, from: worker, trigger: wait, next: WAITING}}
  - {{id: done, from: worker, trigger: done, next: DONE, context: {{by: result.by}}}}
  - {{id: go, from: WAITING, trigger: go, next: DONE, context: {{by: result.by}}}}
"""


class Agents:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entered: dict[str, threading.Event] = {}
        self.release: dict[str, threading.Event] = {}

    def events(self, instance: str) -> tuple[threading.Event, threading.Event]:
        with self.lock:
            return (self.entered.setdefault(instance, threading.Event()),
                    self.release.setdefault(instance, threading.Event()))

    def worker(self, work: baton.Work) -> baton.Outcome:
        mode = work.input.get("mode")
        if mode == "wait":
            return baton.Outcome("wait")
        if mode == "hold":
            entered, release = self.events(work.instance_id)
            entered.set()
            release.wait(60)
        return baton.Outcome("done", {"by": "worker"})

    def helper(self, work: baton.Work) -> baton.Outcome:
        return baton.Outcome("done", {"by": "helper"})


AGENTS: Agents
SERVER: Server
AGENT_SERVER: baton.AgentServer
CLIENT: baton.Client


def setUpModule() -> None:
    global AGENTS, SERVER, AGENT_SERVER, CLIENT
    AGENTS = Agents()
    AGENT_SERVER = baton.AgentServer({"worker": AGENTS.worker, "helper": AGENTS.helper}, port=0).start()
    try:
        SERVER = Server({"pyclient.yaml": WORKFLOW.format(agents=f"http://127.0.0.1:{AGENT_SERVER.port}")},
                        tokens=[TOKEN])
    except BaseException:
        AGENT_SERVER.close()
        raise
    CLIENT = baton.Client(SERVER.url, TOKEN)


def tearDownModule() -> None:
    for release in AGENTS.release.values():
        release.set()
    SERVER.close()
    AGENT_SERVER.close()


def new_id() -> str:
    return "py-" + uuid.uuid4().hex[:12]


def until(what: str, cond: Any) -> Any:
    """Polls cond until it is true, for at most a minute."""
    deadline = time.monotonic() + 60
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("gave up waiting for " + what)
        time.sleep(0.005)


class Instances(unittest.TestCase):
    def test_start_is_safe_to_retry_and_wait_returns_the_end(self) -> None:
        id = new_id()
        first = CLIENT.start("pyclient", {"mode": "done"}, id=id)
        self.assertEqual((first["id"], first["workflow"], first["version"]), (id, "pyclient", 1))
        self.assertEqual(CLIENT.start("pyclient", {"mode": "done"}, id=id)["id"], id)
        got = CLIENT.wait(id, timeout=60)
        self.assertEqual((got["status"], got["outcome"], got["context"]), ("completed", "DONE", {"by": "worker"}))
        self.assertEqual(CLIENT.get(id), got)
        kinds = [e["kind"] for e in CLIENT.history(id)]
        self.assertEqual((kinds[0], kinds[-1]), ("started", "completed"))

    def test_list_pages_newest_first(self) -> None:
        ids = []
        for _ in range(3):
            ids.append(CLIENT.start("pyclient", {"mode": "done"}, id=new_id())["id"])
        for id in ids:
            CLIENT.wait(id, timeout=60)
        page = CLIENT.list(workflow="pyclient", limit=2)
        self.assertEqual(len(page["instances"]), 2)
        self.assertIsNotNone(page["next"])
        rest = CLIENT.list(workflow="pyclient", limit=1000, cursor=page["next"])
        self.assertIsNone(rest["next"])
        listed = [i["id"] for i in page["instances"] + rest["instances"]]
        self.assertEqual(listed, [i["id"] for i in CLIENT.instances(workflow="pyclient", page_size=1)])
        self.assertEqual([i for i in listed if i in ids], list(reversed(ids)))
        done = CLIENT.list(workflow="pyclient", status="completed", limit=1000)["instances"]
        self.assertTrue(set(ids) <= {i["id"] for i in done})

    def test_signal_a_waiting_instance(self) -> None:
        id = CLIENT.start("pyclient", {"mode": "wait"}, id=new_id())["id"]
        until("waiting", lambda: CLIENT.get(id)["status"] == "waiting")
        self.assertEqual(CLIENT.signal(id, "go", {"by": "ana"})["id"], id)
        got = CLIENT.wait(id, timeout=60)
        self.assertEqual((got["outcome"], got["context"]), ("DONE", {"by": "ana"}))
        with self.assertRaises(baton.NotWaitingError) as cm:
            CLIENT.signal(id, "go")
        self.assertEqual((cm.exception.status, cm.exception.code), (409, "not_waiting"))
        self.assertIn(id, cm.exception.message)

    def test_cancel(self) -> None:
        id = CLIENT.start("pyclient", {"mode": "wait"}, id=new_id())["id"]
        until("waiting", lambda: CLIENT.get(id)["status"] == "waiting")
        self.assertEqual(CLIENT.cancel(id)["status"], "cancelled")
        self.assertEqual(CLIENT.wait(id, timeout=60)["status"], "cancelled")
        with self.assertRaises(baton.FinishedError) as cm:
            CLIENT.cancel(id)
        self.assertEqual(cm.exception.code, "finished")

    def test_select_hands_the_step_to_a_selectable_agent(self) -> None:
        id = CLIENT.start("pyclient", {"mode": "hold"}, id=new_id())["id"]
        entered, release = AGENTS.events(id)
        self.assertTrue(entered.wait(60))
        with self.assertRaises(baton.InvalidRequestError) as cm:
            CLIENT.select(id, "nobody")
        self.assertEqual(cm.exception.field, "agent")
        self.assertEqual(CLIENT.select(id, "helper", "a person chose")["id"], id)
        got = CLIENT.wait(id, timeout=60)
        release.set()
        self.assertEqual((got["outcome"], got["context"]), ("DONE", {"by": "helper"}))
        with self.assertRaises(baton.NoActiveRunError):
            CLIENT.select(id, "helper")

    def test_wait_gives_up_after_its_timeout(self) -> None:
        id = CLIENT.start("pyclient", {"mode": "wait"}, id=new_id())["id"]
        with self.assertRaises(baton.WaitTimeout):
            CLIENT.wait(id, timeout=0.2)
        CLIENT.cancel(id)

    def test_report_is_answered_by_the_engine(self) -> None:
        id = CLIENT.start("pyclient", {"mode": "done"}, id=new_id())["id"]
        CLIENT.wait(id, timeout=60)
        ans = CLIENT.report({"instance_id": id, "step": 1, "agent": "worker", "trigger": "done"})
        self.assertEqual((ans["ok"], ans["code"]), (False, "stale"))
        ans = CLIENT.report({"instance_id": "nobody-" + id, "step": 1, "agent": "worker", "trigger": "done"})
        self.assertEqual(ans["code"], "unknown_instance")
        # A report of a run that says nothing is refused by the engine...
        ans = CLIENT.report({"instance_id": id, "step": 1, "agent": "worker"})
        self.assertEqual((ans["ok"], ans["code"]), (False, "invalid"))
        # ... a body that names no run is no report at all.
        with self.assertRaises(baton.InvalidRequestError) as cm:
            CLIENT.report({"trigger": "done"})
        self.assertEqual(cm.exception.field, "instance_id")


class Errors(unittest.TestCase):
    def test_each_error_is_its_typed_exception(self) -> None:
        cases = [
            (lambda: CLIENT.get("no-such-instance"), baton.UnknownInstanceError, 404, "unknown_instance", None),
            (lambda: CLIENT.start("nope"), baton.UnknownWorkflowError, 404, "unknown_workflow", "workflow"),
            (lambda: CLIENT.start("pyclient", version=9), baton.UnknownVersionError, 404, "unknown_version", None),
            (lambda: CLIENT.list(status="bogus"), baton.InvalidRequestError, 400, "invalid_field", "status"),
            (lambda: CLIENT.graph("pyclient", format="png"), baton.InvalidRequestError, 400, "invalid_field", "format"),
            (lambda: CLIENT.start("pyclient", id=""), baton.InvalidRequestError, 400, "invalid_field", "id"),
            (lambda: baton.Client(SERVER.url, "wrong").get("x"), baton.UnauthorizedError, 401, "unauthorized", None),
        ]
        for call, cls, status, code, field in cases:
            with self.subTest(code=code, field=field):
                with self.assertRaises(cls) as cm:
                    call()
                e = cm.exception
                self.assertIsInstance(e, baton.APIError)
                self.assertEqual((e.status, e.code), (status, code))
                if field is not None:
                    self.assertEqual(e.field, field)
                self.assertTrue(e.message)

    def test_the_token_and_server_come_from_the_environment(self) -> None:
        with mock.patch.dict(os.environ, {"BATON_SERVER": SERVER.url, "BATON_TOKEN": TOKEN}):
            self.assertEqual(baton.Client().workflows()[0]["name"], "pyclient")
        with mock.patch.dict(os.environ, {"BATON_SERVER": SERVER.url}):
            os.environ.pop("BATON_TOKEN", None)
            with self.assertRaises(baton.UnauthorizedError):
                baton.Client().workflows()

    def test_a_server_that_does_not_answer_is_a_transport_error(self) -> None:
        with self.assertRaises(baton.TransportError):
            baton.Client("http://" + free_addr(), TOKEN, timeout=5).get("x")
        with self.assertRaises(ValueError):
            baton.Client("ftp://example.com")


class Catalog(unittest.TestCase):
    def test_workflows_graph_and_dead_letters(self) -> None:
        [wf] = CLIENT.workflows()
        self.assertEqual((wf["name"], wf["description"]), ("pyclient", "the client suite's workflow"))
        self.assertEqual([(v["version"], v["current"]) for v in wf["versions"]], [(1, True)])
        g = CLIENT.graph("pyclient")
        self.assertEqual((g["workflow"], g["format"]), ("pyclient", "mermaid"))
        self.assertIn("WORKING", g["graph"])
        self.assertIn("digraph", CLIENT.graph("pyclient", format="dot", version=1)["graph"])
        page = CLIENT.dead_letters(limit=10)
        self.assertIsInstance(page["dead_letters"], list)
        self.assertIn("next", page)
        agents = sorted((a["id"], a["kind"], a["workflows"]) for a in CLIENT.agents())
        self.assertEqual(agents, [("helper", "http", ["pyclient"]), ("worker", "http", ["pyclient"])])


class Events(unittest.TestCase):
    def collect(self, stream: baton.EventStream, id: str, out: list[baton.Event]) -> None:
        """Appends the stream's events to out until id's end (a minute at most)."""
        stream.deadline = time.monotonic() + 60
        for ev in stream:
            out.append(ev)
            if ev["type"] in baton.FINISHED and ev.get("instance") == id:
                return

    def test_a_dropped_stream_resumes_with_last_event_id(self) -> None:
        # The proxy cuts the first stream after its first event, and holds
        # the client's reconnection until the instance has ended: what the
        # resumed stream brings, only Last-Event-ID can have asked for.
        proxy = Proxy(SERVER.addr, cut_when=lambda seen: b"\nid: " in seen, cuts=1)
        id = new_id()
        direct = CLIENT.events(instance=id)
        resumed = baton.Client(proxy.url, TOKEN).events(instance=id)
        try:
            proxy.hold.clear()
            want: list[baton.Event] = []
            got: list[baton.Event] = []
            reader = threading.Thread(target=self.collect, args=(resumed, id, got), daemon=True)
            reader.start()
            CLIENT.start("pyclient", {"mode": "hold"}, id=id)
            entered, release = AGENTS.events(id)
            self.assertTrue(entered.wait(60))
            self.assertTrue(proxy.dropped.wait(60), "the proxy did not cut the stream")
            release.set()
            self.collect(direct, id, want)
            proxy.hold.set()
            reader.join(60)
            self.assertFalse(reader.is_alive(), f"the resumed stream has only {got}")
            self.assertEqual(resumed.reconnects, 1)
            self.assertEqual([e["id"] for e in got], [e["id"] for e in want])
            self.assertEqual(got, want)
            self.assertEqual((want[0]["type"], want[-1]["type"]), ("instance_started", "completed"))
            self.assertEqual(resumed.last_event_id, str(want[-1]["id"]))
        finally:
            direct.close()
            resumed.close()
            proxy.close()

    def test_last_event_id_replays_what_the_server_keeps(self) -> None:
        id = new_id()
        with CLIENT.events(instance=id) as live:
            CLIENT.start("pyclient", {"mode": "done"}, id=id)
            first: list[baton.Event] = []
            self.collect(live, id, first)
        with CLIENT.events(instance=id, last_event_id=str(first[0]["id"])) as again:
            rest: list[baton.Event] = []
            self.collect(again, id, rest)
        self.assertEqual(rest, first[1:])

    def test_wait_follows_a_stream_that_drops(self) -> None:
        proxy = Proxy(SERVER.addr, cut_when=lambda seen: b"\nid: " in seen, cuts=1)
        try:
            id = CLIENT.start("pyclient", {"mode": "hold"}, id=new_id())["id"]
            entered, release = AGENTS.events(id)
            self.assertTrue(entered.wait(60))
            result: list[baton.Instance] = []
            waiter = threading.Thread(target=lambda: result.append(baton.Client(proxy.url, TOKEN).wait(id, timeout=60)),
                                      daemon=True)
            waiter.start()
            # Its stream and its first look at the instance.
            until("the waiter's connections", lambda: proxy.connections >= 2)
            release.set()
            waiter.join(60)
            self.assertTrue(proxy.dropped.is_set())
            self.assertEqual(result[0]["outcome"], "DONE")
        finally:
            proxy.close()


class Parsing(unittest.TestCase):
    """The event stream's parser against a loopback server that sends canned streams."""

    def serve(self, body: bytes) -> tuple[str, list[Optional[str]]]:
        seen: list[Optional[str]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def do_GET(self) -> None:
                seen.append(self.headers.get("Last-Event-ID"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(t.join)
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        return f"http://127.0.0.1:{srv.server_address[1]}", seen

    def test_fields_comments_and_the_end(self) -> None:
        url, seen = self.serve(
            b": hello\r\n\r\n"
            b"id: 7\r\nevent: state_changed\r\ndata: {\"id\": 7, \"type\": \"state_changed\",\r\ndata:  \"to\": \"B\"}\r\n\r\n"
            b"retry: 10\n\n"
            b"id: 8\nevent: gap\ndata: not json\n\n"
            b"id: 9\ndata\n\n"
            b"event: end\ndata: {}\n\n"
            b"id: 10\nevent: never\ndata: {}\n\n")
        with baton.Client(url).events(last_event_id="6") as stream:
            stream.deadline = time.monotonic() + 60
            got = list(stream)
            self.assertEqual(got, [
                {"id": 7, "type": "state_changed", "to": "B"},
                {"type": "gap", "data": "not json"},
                {"type": "message", "data": ""},
            ])
            self.assertEqual((stream.last_event_id, stream.reconnects), ("9", 0))
        self.assertEqual(seen, ["6"])

    def test_a_stream_that_ends_is_opened_again_from_the_last_id(self) -> None:
        url, seen = self.serve(b"id: 3\ndata: {\"type\": \"run_started\"}\n\n")
        with baton.Client(url).events() as stream:
            # An answer with Connection: close, whose connection lets go of
            # its socket: the stream must still be read, and opened again.
            stream.deadline = time.monotonic() + 60
            got = [next(stream), next(stream)]
        self.assertEqual(got, [{"type": "run_started"}] * 2)
        self.assertEqual(seen, [None, "3"])


if __name__ == "__main__":
    unittest.main()
