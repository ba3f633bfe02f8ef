# The sorter, an HTTP agent in Python with only the standard library: it
# checks the signature of each call and answers with its report at once.
import hashlib, hmac, json, os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ["SORTER_SECRET"].encode()

class Sorter(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        want = "sha256=" + hmac.new(SECRET, body, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(want, self.headers.get("Baton-Signature", "")):
            self.send_response(401); self.end_headers(); return
        work = json.loads(body)
        meta, content = work["metadata"], work["content"]
        text = content["input"].get("text", "")
        report = {"instance_id": meta["instance_id"], "step": meta["step"], "agent": "sorter",
                  "trigger": "sorted", "result": {"urgent": "down" in text, "topic": "billing"}}
        out = json.dumps(report).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

ThreadingHTTPServer(("127.0.0.1", 9000), Sorter).serve_forever()
