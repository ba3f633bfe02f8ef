# A tiny HTTP agent: the sorter answers at once; the responder answers
# later, by POSTing its report to the server.
import hashlib, hmac, json, os, threading, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["SORTER_SECRET"].encode()
BATON = os.environ.get("BATON_SERVER", "http://127.0.0.1:8080")

def report_later(report):
    req = urllib.request.Request(BATON + "/v1/reports", data=json.dumps(report).encode(),
                                 headers={"Content-Type": "application/json"})
    print("report:", urllib.request.urlopen(req).read().decode())

class Agent(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        work = json.loads(body)
        meta, content = work["metadata"], work["content"]
        report = {"instance_id": meta["instance_id"], "step": meta["step"], "agent": self.path.strip("/")}
        if self.path == "/sorter":
            want = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(want, self.headers.get("Baton-Signature", "")):
                self.send_response(401); self.end_headers(); return
            text = content["input"].get("text", "")
            report.update(trigger="sorted", result={"urgent": "down" in text, "topic": "billing"})
            out = json.dumps(report).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)
        else:
            report.update(trigger="answered", result={"reply": "Thanks, we are on it."})
            self.send_response(202); self.end_headers()
            threading.Timer(1.0, report_later, [report]).start()

ThreadingHTTPServer(("127.0.0.1", 9000), Agent).serve_forever()
