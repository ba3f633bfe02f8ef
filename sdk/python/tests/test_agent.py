"""The agent server against a real ``wfrun serve``: the engine calls the
agents over HTTP, signed, and every way a handler can end reaches the
workflow's rules. Bad calls are refused without running a handler.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
import unittest
import urllib.error
import urllib.request
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional

import baton
from harness import Proxy, Server, free_addr

SECRET = "pysdk-secret"
TOKEN = "pysdk-token"

WORKFLOW = """
workflow: pyagent
version: 1
initial: WORKING
agents:
  worker: {{url: "{proxy}/worker", secret_env: PYSDK_SECRET}}
  helper: {{url: "{agents}/helper", secret_env: PYSDK_SECRET}}
states:
  WORKING: {{agent: worker, timeout: 30s, retry: {{max: 1, backoff: [10ms]}}}}
  DONE: {{terminal: true}}
  FAILED: {{terminal: true}}
  REJECTED: {{terminal: true}}
rules:
  - {{id: done, from: worker, trigger: done, next: DONE, context: {{echo: result.echo}}}}
  - {{id: failed, from: worker, trigger: [error, timeout], next: FAILED, context: {{kind: error.kind, message: error.message}}}}
  - {{id: rejected, from: worker, trigger: rejected, next: REJECTED, context: {{message: error.message}}}}
"""


USED = baton.Usage(input_tokens=1200, output_tokens=350, cost=0.0123, model="large-2")


class Agents:
    """The suite's agents; they keep what they saw for the tests."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: dict[str, list[baton.Work]] = {}
        self.entered: dict[str, threading.Event] = {}
        self.release: dict[str, threading.Event] = {}

    def events(self, instance: str) -> tuple[threading.Event, threading.Event]:
        with self.lock:
            return (self.entered.setdefault(instance, threading.Event()),
                    self.release.setdefault(instance, threading.Event()))

    def keep(self, work: baton.Work) -> None:
        with self.lock:
            self.seen.setdefault(work.instance_id, []).append(work)

    def worker(self, work: baton.Work) -> baton.Result:
        self.keep(work)
        mode = work.input.get("mode")
        if mode == "echo":
            return baton.Outcome("done", {"echo": work.input.get("text")})
        if mode == "boom":
            raise RuntimeError("boom: the model is down")
        if mode == "fail":
            raise baton.Fail("rate_limited", "slow down", retryable=False)
        if mode == "reject":
            raise baton.Reject("not mine")
        if mode == "handoff":
            return baton.Handoff(to="helper", reason="clarification", explanation="helper knows",
                                 task="help out", payload={"x": 1})
        if mode == "usage":
            return baton.Outcome("done", {"echo": "used"}, usage=USED)
        if mode == "fail_usage":
            raise baton.Fail("rate_limited", "slow down", retryable=False, usage={"input_tokens": 10, "cost": 0.5})
        if mode == "defer_usage":
            work.defer()
            return baton.Outcome("done", {"echo": "later"}, usage=USED)
        if mode == "bad_usage":
            return baton.Outcome("done", usage=baton.Usage(cost=-1.0))
        if mode in ("progress", "progress_deferred"):
            if mode == "progress_deferred":
                work.defer()
            answer = work.progress("checking the order", delta="The order ", data={"lines": 3})
            return baton.Outcome("done", {"echo": answer})
        if mode == "defer":
            entered, release = self.events(work.instance_id)
            work.defer()
            entered.set()
            release.wait(60)
            return baton.Outcome("done", {"echo": "later"})
        return "done"  # type: ignore[return-value]  # not an Outcome: invalid_result

    def helper(self, work: baton.Work) -> baton.Outcome:
        self.keep(work)
        return baton.Outcome("done", {"echo": f"helped with {work.task_description} {work.payload}"})


AGENTS: Agents
SERVER: Server
AGENT_SERVER: baton.AgentServer
PROXY: Proxy
CLIENT: baton.Client


def setUpModule() -> None:
    global AGENTS, SERVER, AGENT_SERVER, PROXY, CLIENT
    AGENTS = Agents()
    api = free_addr()
    AGENT_SERVER = baton.AgentServer({"worker": AGENTS.worker, "helper": AGENTS.helper}, port=0,
                                     secret=SECRET, server="http://" + api, token=TOKEN).start()
    PROXY = Proxy(f"127.0.0.1:{AGENT_SERVER.port}")
    try:
        text = WORKFLOW.format(proxy=PROXY.url, agents=f"http://127.0.0.1:{AGENT_SERVER.port}")
        SERVER = Server({"pyagent.yaml": text}, env={"PYSDK_SECRET": SECRET}, tokens=[TOKEN], addr=api)
    except BaseException:
        PROXY.close()
        AGENT_SERVER.close()
        raise
    CLIENT = baton.Client(SERVER.url, TOKEN)


def tearDownModule() -> None:
    for release in AGENTS.release.values():
        release.set()
    SERVER.close()
    PROXY.close()
    AGENT_SERVER.close()


def run(mode: str, **input: Any) -> baton.Instance:
    """Starts an instance in mode and waits for its end."""
    started = CLIENT.start("pyagent", {"mode": mode, **input})
    return CLIENT.wait(started["id"], timeout=120)


def work_body(agent: str = "worker", **content: Any) -> bytes:
    """A work message as the engine writes it, for calls made by hand."""
    return json.dumps({
        "message_id": "m-1", "message_type": "HANDOFF", "from_agent": "engine", "to_agent": agent,
        "priority": "NORMAL",
        "content": {"action": "run", "task_description": "t", "input": {"mode": "echo", "text": "hi"},
                    "context": {}, "previous_result": {}, "constraints": {}, "reason": "start", **content},
        "metadata": {"workflow": "w", "version": 1, "instance_id": "by-hand", "step": 1, "attempt": 1,
                     "state": "WORKING", "handoff_id": "", "idempotency_key": "by-hand:1",
                     "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
    }).encode()


def post(url: str, body: bytes, signature: Optional[str]) -> tuple[int, Any]:
    """POSTs body to an agent; its status and decoded answer (None when empty)."""
    req = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    if signature is not None:
        req.add_header("Baton-Signature", signature)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            data = resp.read()
            return resp.status, json.loads(data) if data else None
    except urllib.error.HTTPError as exc:
        data = exc.read()
        return exc.code, json.loads(data) if data else None


class Outcomes(unittest.TestCase):
    def test_outcome_reaches_the_rules_and_work_has_every_member(self) -> None:
        got = run("echo", text="hello")
        self.assertEqual((got["status"], got["outcome"], got["context"]),
                         ("completed", "DONE", {"echo": "hello"}))
        [w] = AGENTS.seen[got["id"]]
        self.assertEqual((w.agent, w.instance_id, w.step, w.attempt, w.workflow, w.version, w.state),
                         ("worker", got["id"], 1, 1, "pyagent", 1, "WORKING"))
        self.assertEqual((w.action, w.notice, w.reason, w.from_agent, w.handoff_id),
                         ("run", False, "start", "engine", ""))
        self.assertEqual(w.input, {"mode": "echo", "text": "hello"})
        self.assertEqual((w.context, w.previous_result, w.constraints, w.payload), ({}, {}, {}, None))
        self.assertEqual(w.idempotency_key, got["id"] + ":1")
        self.assertRegex(w.traceparent, r"^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$")
        self.assertIsInstance(w.deadline, datetime)
        assert w.deadline is not None
        self.assertEqual(w.deadline.tzinfo, timezone.utc)
        self.assertFalse(w.has_item)
        self.assertIsNone(w.heartbeat)
        self.assertIsInstance(w.message_id, str)
        self.assertEqual(w.priority, "NORMAL")
        self.assertIs(w.raw["metadata"]["instance_id"], w.instance_id)

    def test_an_exception_fails_the_run_with_kind_error_and_the_server_keeps_serving(self) -> None:
        got = run("boom")
        self.assertEqual((got["outcome"], got["context"]["kind"]), ("FAILED", "error"))
        self.assertIn("boom: the model is down", got["context"]["message"])
        self.assertEqual(got["step"], 2, "an exception is retryable: the state's one retry runs")
        again = run("echo", text="still here")
        self.assertEqual((again["outcome"], again["context"]), ("DONE", {"echo": "still here"}))

    def test_fail_gives_its_kind_and_is_not_retried_when_not_retryable(self) -> None:
        got = run("fail")
        self.assertEqual((got["outcome"], got["context"]), ("FAILED", {"kind": "rate_limited", "message": "slow down"}))
        self.assertEqual(got["step"], 1)

    def test_reject_is_the_outcome_rejected(self) -> None:
        got = run("reject")
        self.assertEqual(got["outcome"], "REJECTED")
        self.assertIn("not mine", got["context"]["message"])

    def test_a_value_that_is_not_an_outcome_is_an_invalid_result(self) -> None:
        got = run("nonsense")
        self.assertEqual((got["outcome"], got["context"]["kind"], got["step"]), ("FAILED", "invalid_result", 1))

    def test_handoff_runs_the_other_agent(self) -> None:
        got = run("handoff")
        self.assertEqual((got["outcome"], got["context"]["echo"]), ("DONE", "helped with help out {'x': 1}"))
        worker, helper = AGENTS.seen[got["id"]]
        self.assertEqual((helper.agent, helper.from_agent, helper.payload, helper.step),
                         ("helper", "worker", {"x": 1}, 2))
        self.assertEqual((helper.reason, helper.explanation), ("clarification", "helper knows"))

    def test_defer_answers_202_and_reports_through_the_api(self) -> None:
        started = CLIENT.start("pyagent", {"mode": "defer"})
        entered, release = AGENTS.events(started["id"])
        self.assertTrue(entered.wait(60), "the handler did not run")
        # The call was answered while the handler still runs.
        deadline = time.monotonic() + 60
        while not any(line.split()[1:2] == ["202"] for line in PROXY.status_lines):
            self.assertLess(time.monotonic(), deadline, f"no 202 among {PROXY.status_lines}")
            time.sleep(0.005)
        self.assertEqual(CLIENT.get(started["id"])["status"], "running")
        release.set()
        got = CLIENT.wait(started["id"], timeout=120)
        self.assertEqual((got["outcome"], got["context"], got["step"]), ("DONE", {"echo": "later"}, 1))
        with self.assertRaises(RuntimeError):
            baton.Work.decode(work_body()).defer()


class UsageAndProgress(unittest.TestCase):
    def test_usage_on_an_outcome_is_in_the_instance_totals_and_its_event(self) -> None:
        for mode in ("usage", "defer_usage"):
            with self.subTest(mode=mode):
                id = f"{mode}-{uuid.uuid4().hex[:8]}"
                with CLIENT.events(instance=id) as events:
                    CLIENT.start("pyagent", {"mode": mode}, id=id)
                    reported = next(ev for ev in events if ev["type"] in ("agent_reported", *baton.FINISHED))
                self.assertEqual(reported["type"], "agent_reported")
                got = CLIENT.wait(id, timeout=120)
                self.assertEqual(got["outcome"], "DONE")
                totals = {"input_tokens": 1200, "output_tokens": 350, "tokens": 1550, "cost": 0.0123}
                self.assertEqual(got["usage"], {**totals, "agents": {"worker": totals}})
                self.assertEqual(CLIENT.get(id)["usage"], got["usage"])
                self.assertEqual(reported["usage"], {"input_tokens": 1200, "output_tokens": 350, "cost": 0.0123, "model": "large-2"})

    def test_a_failed_runs_usage_counts(self) -> None:
        got = run("fail_usage")
        self.assertEqual(got["outcome"], "FAILED")
        self.assertEqual((got["usage"]["input_tokens"], got["usage"]["tokens"], got["usage"]["cost"]), (10, 10, 0.5))

    def test_bad_usage_in_a_handler_fails_the_run_as_an_invalid_result(self) -> None:
        quiet = logging.getLogger("baton")
        level = quiet.level
        quiet.setLevel(logging.ERROR)  # the handler's exception is logged as a warning
        try:
            got = run("bad_usage")
        finally:
            quiet.setLevel(level)
        self.assertEqual((got["outcome"], got["context"]["kind"], got["step"]), ("FAILED", "invalid_result", 1))
        self.assertIn("usage.cost must not be negative", got["context"]["message"])
        self.assertEqual(got["usage"]["tokens"], 0)

    def test_progress_reaches_the_event_stream_deferred_or_not(self) -> None:
        for mode in ("progress", "progress_deferred"):
            with self.subTest(mode=mode):
                id = f"{mode}-{uuid.uuid4().hex[:8]}"
                with CLIENT.events(instance=id) as events:
                    CLIENT.start("pyagent", {"mode": mode}, id=id)
                    ev = next(ev for ev in events if ev["type"] in ("agent_progress", *baton.FINISHED))
                self.assertEqual(ev["type"], "agent_progress")
                self.assertEqual((ev["agent"], ev["step"], ev["state"]), ("worker", 1, "WORKING"))
                self.assertEqual(ev["progress"], {"message": "checking the order", "delta": "The order ", "data": {"lines": 3}})
                got = CLIENT.wait(id, timeout=120)
                self.assertEqual((got["outcome"], got["context"]), ("DONE", {"echo": {"ok": True}}))


class BadCalls(unittest.TestCase):
    def url(self, agent: str = "worker") -> str:
        return f"http://127.0.0.1:{AGENT_SERVER.port}/{agent}"

    def test_a_signed_call_by_hand_is_answered_with_its_report(self) -> None:
        body = work_body()
        status, ans = post(self.url(), body, baton.sign(SECRET, body))
        self.assertEqual((status, ans), (200, {"instance_id": "by-hand", "step": 1, "agent": "worker",
                                               "trigger": "done", "result": {"echo": "hi"}}))

    def test_a_bad_or_missing_signature_is_401_and_runs_nothing(self) -> None:
        body = work_body(input={"mode": "echo", "text": "unsigned"})
        for sig in (None, "", "sha256=" + "0" * 64, baton.sign("other", body), "md5=abc"):
            with self.subTest(signature=sig):
                status, ans = post(self.url(), body, sig)
                self.assertEqual((status, ans["error"]["code"]), (401, "unauthorized"))
        self.assertNotIn("by-hand-unsigned", AGENTS.seen)
        with AGENTS.lock:
            self.assertFalse(any(w.input.get("text") == "unsigned" for ws in AGENTS.seen.values() for w in ws))

    def test_a_body_that_is_not_work_is_400_naming_the_field(self) -> None:
        good = json.loads(work_body())
        no_instance = dict(good, metadata={**good["metadata"], "instance_id": ""})
        bad_step = dict(good, metadata={**good["metadata"], "step": 1.5})
        bad_input = dict(good, content={**good["content"], "input": [1]})
        for body, field in (
            (b"not json", "work"),
            (b"[1, 2]", "work"),
            (json.dumps(dict(good, message_type="REPORT")).encode(), "message_type"),
            (json.dumps(no_instance).encode(), "metadata.instance_id"),
            (json.dumps(bad_step).encode(), "metadata.step"),
            (json.dumps(bad_input).encode(), "content.input"),
        ):
            with self.subTest(field=field):
                status, ans = post(self.url(), body, baton.sign(SECRET, body))
                self.assertEqual((status, ans["error"]["code"], ans["error"]["field"]), (400, "invalid_field", field))

    def test_an_unknown_agent_is_404(self) -> None:
        body = work_body()
        status, ans = post(self.url("nobody"), body, baton.sign(SECRET, body))
        self.assertEqual((status, ans["error"]["code"]), (404, "not_found"))


class Serving(unittest.TestCase):
    def test_concurrency_bounds_the_handlers_at_work(self) -> None:
        lock, release = threading.Lock(), threading.Event()
        running, most = [0], [0]

        def slow(work: baton.Work) -> baton.Outcome:
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            release.wait(60)
            with lock:
                running[0] -= 1
            return baton.Outcome("done")

        with baton.AgentServer({"slow": slow}, port=0, concurrency=2).start() as srv:
            url = f"http://127.0.0.1:{srv.port}/slow"
            answers: list[int] = []
            calls = [threading.Thread(target=lambda: answers.append(post(url, work_body("slow"), None)[0]))
                     for _ in range(4)]
            for c in calls:
                c.start()
            deadline = time.monotonic() + 60
            # Two run and two wait their turn in the pool's queue.
            while not (running[0] == 2 and srv._pool._work_queue.qsize() == 2):
                self.assertLess(time.monotonic(), deadline, f"running {running[0]}")
                time.sleep(0.002)
            release.set()
            for c in calls:
                c.join()
        self.assertEqual((most[0], answers), (2, [200] * 4))

    def test_a_handler_that_exits_still_gets_its_call_answered(self) -> None:
        def leave(work: baton.Work) -> baton.Outcome:
            raise SystemExit("bye")

        quiet = logging.getLogger("baton.tests.quiet")
        quiet.propagate = False
        quiet.addHandler(logging.NullHandler())
        with baton.AgentServer({"leave": leave}, port=0, logger=quiet).start() as srv:
            status, ans = post(f"http://127.0.0.1:{srv.port}/leave", work_body("leave"), None)
        self.assertEqual((status, ans["error"]), (200, {"message": "bye", "retryable": True}))

    def test_sigterm_lets_the_call_under_way_finish_then_exits(self) -> None:
        port = int(free_addr().rpartition(":")[2])
        script = textwrap.dedent(f"""
            import logging, sys
            import baton
            logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
            def slow(work):
                print("entered", flush=True)
                sys.stdin.readline()
                return baton.Outcome("done", {{"after": "sigterm"}})
            baton.serve({{"slow": slow}}, port={port})
            print("stopped", flush=True)
        """)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(baton.__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
        proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=env)
        try:
            assert proc.stdout is not None and proc.stdin is not None
            line = proc.stdout.readline()
            self.assertTrue(line.startswith("baton: serving slow on"), line)
            answer: list[tuple[int, Any]] = []
            call = threading.Thread(target=lambda: answer.append(post(f"http://127.0.0.1:{port}/slow", work_body("slow"), None)))
            call.start()
            self.assertEqual(proc.stdout.readline(), "entered\n")
            proc.terminate()
            proc.stdin.write("go on\n")
            proc.stdin.flush()
            call.join()
            self.assertEqual(answer[0][0], 200)
            self.assertEqual(answer[0][1]["result"], {"after": "sigterm"})
            self.assertEqual(proc.wait(60), 0)
            self.assertEqual(proc.stdout.read(), "stopped\n")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            for f in (proc.stdout, proc.stdin):
                if f:
                    f.close()


class Unit(unittest.TestCase):
    """The pieces without a server."""

    def test_signature_round_trip(self) -> None:
        body = b'{"a": 1}'
        sig = baton.sign("k", body)
        self.assertRegex(sig, r"^sha256=[0-9a-f]{64}$")
        self.assertTrue(baton.verify("k", body, sig))
        self.assertTrue(baton.verify(b"k", body, sig.upper().replace("SHA256=", "sha256=")))
        for bad in (None, "", sig[:-1], "sha256=zz", baton.sign("k", body + b" ")):
            self.assertFalse(baton.verify("k", body, bad), bad)

    def test_report_of_each_ending(self) -> None:
        w = baton.Work.decode(work_body())
        base = {"instance_id": "by-hand", "step": 1, "agent": "worker"}
        for value, error, want in (
            (baton.Outcome("ok"), None, {"trigger": "ok"}),
            (baton.Outcome("ok", {"a": 1}), None, {"trigger": "ok", "result": {"a": 1}}),
            (baton.Handoff("rag", return_control=True, result={"r": 1}), None,
             {"handoff": {"to": "rag", "return_control": True}, "result": {"r": 1}}),
            (None, baton.Fail("rate_limited", "slow", retryable=False), {"error": {"message": "slow", "retryable": False, "kind": "rate_limited"}}),
            (None, baton.Fail("error", ""), {"error": {"message": "error", "retryable": True}}),
            (None, baton.Reject("busy"), {"reject": "busy"}),
            (None, ValueError(), {"error": {"message": "ValueError", "retryable": True}}),
            (baton.Outcome(""), None, {"error": {"message": "baton: the handler returned an Outcome without a trigger, not an Outcome or a Handoff", "retryable": False, "kind": "invalid_result"}}),
        ):
            with self.subTest(want=want):
                self.assertEqual(baton.report_of(w, value, error), {**base, **want})

    def test_usage_goes_with_every_ending(self) -> None:
        w = baton.Work.decode(work_body())
        used = {"input_tokens": 5, "output_tokens": 2, "cost": 0.25, "model": "m"}
        u = baton.Usage(**used)
        for value, error in (
            (baton.Outcome("ok", usage=u), None),
            (baton.Handoff("rag", usage=used), None),
            (None, baton.Fail("rate_limited", "slow", usage=u)),
            (None, baton.Reject("busy", usage=used)),
        ):
            with self.subTest(value=value, error=error):
                self.assertEqual(baton.report_of(w, value, error)["usage"], used)
        self.assertNotIn("usage", baton.report_of(w, baton.Outcome("ok", usage=baton.Usage())))
        self.assertEqual(baton.report_of(w, baton.Outcome("ok", usage={"cost": 1}))["usage"], {"cost": 1})

    def test_bad_usage_is_refused_before_it_is_sent(self) -> None:
        for args, field in (
            ({"input_tokens": -1}, "usage.input_tokens"),
            ({"output_tokens": 1.5}, "usage.output_tokens"),
            ({"output_tokens": True}, "usage.output_tokens"),
            ({"input_tokens": 2**63}, "usage.input_tokens"),
            ({"cost": -0.01}, "usage.cost"),
            ({"cost": float("nan")}, "usage.cost"),
            ({"cost": float("inf")}, "usage.cost"),
            ({"cost": "0.1"}, "usage.cost"),
            ({"model": 4}, "usage.model"),
        ):
            with self.subTest(args=args):
                for make in (lambda: baton.Usage(**args), lambda: baton.Outcome("ok", usage=args),
                             lambda: baton.Fail("k", "m", usage=args), lambda: baton.Reject("r", usage=args),
                             lambda: baton.Handoff("rag", usage=args)):
                    with self.assertRaises(baton.UsageError) as cm:
                        make()
                    self.assertEqual(cm.exception.field, field)
                    self.assertIsInstance(cm.exception, ValueError)
        with self.assertRaises(baton.UsageError) as cm:
            baton.Outcome("ok", usage={"tokens": 3})
        self.assertEqual(cm.exception.field, "usage.tokens")
        with self.assertRaises(baton.UsageError) as cm:
            baton.Outcome("ok", usage=3)  # type: ignore[arg-type]
        self.assertEqual(cm.exception.field, "usage")

    def test_progress_is_checked_and_needs_an_agent_server(self) -> None:
        w = baton.Work.decode(work_body())
        with self.assertRaises(RuntimeError):
            w.progress("hello")
        sent: list[dict[str, Any]] = []
        w._progress = lambda r: sent.append(r) or {"ok": True}
        self.assertEqual(w.progress("hello", delta="a", data={"n": 1}), {"ok": True})
        self.assertEqual(w.progress(), {"ok": True})
        self.assertEqual(sent, [
            {"instance_id": "by-hand", "step": 1, "agent": "worker", "progress": {"message": "hello", "delta": "a", "data": {"n": 1}}},
            {"instance_id": "by-hand", "step": 1, "agent": "worker", "progress": {}},
        ])
        for kwargs, field in (
            ({"message": 1}, "progress.message"),
            ({"delta": b"x"}, "progress.delta"),
            ({"data": [1]}, "progress.data"),
            ({"data": {"x": float("nan")}}, "progress.data"),
            ({"data": {"x": object()}}, "progress.data"),
        ):
            with self.subTest(kwargs=kwargs):
                with self.assertRaises(baton.ReportError) as cm:
                    w.progress(**kwargs)
                self.assertEqual(cm.exception.field, field)
        self.assertEqual(len(sent), 2, "a refused progress is not sent")

    def test_times_as_go_writes_them(self) -> None:
        w = baton.Work.decode(work_body())
        raw = json.loads(work_body())
        raw["metadata"]["deadline"] = "2026-01-01T12:00:30.123456789Z"
        raw["metadata"]["heartbeat"] = 2.5
        w = baton.Work.from_dict(raw)
        self.assertEqual(w.deadline, datetime(2026, 1, 1, 12, 0, 30, 123456, tzinfo=timezone.utc))
        self.assertEqual(w.heartbeat, 2.5)
        raw["metadata"]["deadline"] = "yesterday"
        with self.assertRaises(baton.WorkError) as cm:
            baton.Work.from_dict(raw)
        self.assertEqual(cm.exception.field, "metadata.deadline")

    def test_items_and_notices(self) -> None:
        raw = json.loads(work_body(item={"sku": "a"}, index=3, action="notice"))
        w = baton.Work.from_dict(raw)
        self.assertEqual((w.has_item, w.item, w.index, w.notice), (True, {"sku": "a"}, 3, True))
        self.assertEqual(baton.report_of(w, None)["trigger"], "noticed")
        del raw["content"]["index"]
        with self.assertRaises(baton.WorkError) as cm:
            baton.Work.from_dict(raw)
        self.assertEqual(cm.exception.field, "content.index")


if __name__ == "__main__":
    unittest.main()
