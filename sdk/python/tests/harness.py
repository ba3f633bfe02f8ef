"""A real ``wfrun serve`` for the suites, and a TCP proxy that can cut a stream.

The server is the binary in ``$BATON_WFRUN`` (the Go test builds it); without
it, ``go build`` makes one from the checkout. Every address is a free
loopback port; every directory a temporary one.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Callable, Optional

ROOT = Path(__file__).resolve().parents[3]


def free_addr() -> str:
    """A loopback address whose port was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def wfrun_binary(tmp: str) -> str:
    path = os.environ.get("BATON_WFRUN")
    if path:
        return path
    if shutil.which("go") is None:
        raise RuntimeError("BATON_WFRUN is not set and go is not installed to build wfrun")
    out = os.path.join(tmp, "wfrun")
    subprocess.run(["go", "build", "-o", out, "./cmd/wfrun"], cwd=ROOT, check=True)
    return out


class Server:
    """``wfrun serve`` on free loopback ports, hosting ``workflows``
    (file name to YAML text), with ``env`` added to its environment and,
    when ``tokens`` is given, a token file; the API on ``addr`` (default a
    free loopback port).
    """

    def __init__(self, workflows: dict[str, str], env: Optional[dict[str, str]] = None,
                 tokens: Optional[list[str]] = None, addr: Optional[str] = None) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="baton-pysdk-")
        tmp = self._tmp.name
        flows = os.path.join(tmp, "workflows")
        os.mkdir(flows)
        for name, text in workflows.items():
            Path(flows, name).write_text(text)
        self.addr = addr or free_addr()
        self.url = "http://" + self.addr
        args = [wfrun_binary(tmp), "serve", "--workflows", flows, "--data", os.path.join(tmp, "data"),
                "--http", self.addr, "--nats-listen", free_addr()]
        if tokens:
            Path(tmp, "tokens").write_text("\n".join(tokens) + "\n")
            args += ["--token-file", os.path.join(tmp, "tokens")]
        self.lines: list[str] = []
        self._ready = threading.Event()
        self._proc = subprocess.Popen(args, env={**os.environ, **(env or {})}, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + 120
        while not self._ready.wait(0.05):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("wfrun serve did not start:\n" + "".join(self.lines))

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            self.lines.append(line)
            if line.startswith("wfrun: serving the HTTP API"):
                self._ready.set()

    def close(self) -> None:
        """Stops the server (SIGTERM, then SIGKILL after 30 s) and removes its files."""
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(30)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._reader.join()
        self._tmp.cleanup()


class Proxy:
    """A TCP proxy on a free loopback port to ``target`` (host:port).

    It keeps the first line each answer starts with (``status_lines``).
    The first ``cuts`` connections are closed as soon as what came back on
    them satisfies ``cut_when``; ``dropped`` is set then. While ``hold`` is
    clear, new connections wait before they reach the target.
    """

    def __init__(self, target: str, cut_when: Optional[Callable[[bytes], bool]] = None, cuts: int = 0) -> None:
        host, _, port = target.rpartition(":")
        self._target = (host, int(port))
        self._cut_when = cut_when
        self._cuts = cuts
        self.status_lines: list[str] = []
        self.dropped = threading.Event()
        self.hold = threading.Event()
        self.hold.set()
        self.connections = 0
        self._lock = threading.Lock()
        self._ln = socket.socket()
        self._ln.bind(("127.0.0.1", 0))
        self._ln.listen(16)
        self.addr = f"127.0.0.1:{self._ln.getsockname()[1]}"
        self.url = "http://" + self.addr
        self._threads: list[threading.Thread] = []
        self._socks: list[socket.socket] = []
        self._closed = False
        self._accepter = threading.Thread(target=self._accept, daemon=True)
        self._accepter.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._ln.accept()
            except OSError:
                return
            with self._lock:
                if self._closed:
                    client.close()
                    return
                self.connections += 1
                cut = self._cuts > 0 and self._cut_when is not None
                if cut:
                    self._cuts -= 1
                self._socks.append(client)
            t = threading.Thread(target=self._serve, args=(client, cut), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, client: socket.socket, cut: bool) -> None:
        self.hold.wait(60)
        try:
            upstream = socket.create_connection(self._target)
        except OSError:
            client.close()
            return
        with self._lock:
            self._socks.append(upstream)
        up = threading.Thread(target=self._pump, args=(client, upstream), daemon=True)
        up.start()
        seen = b""
        first = True
        try:
            while True:
                data = upstream.recv(65536)
                if not data:
                    break
                if first:
                    with self._lock:
                        self.status_lines.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
                    first = False
                client.sendall(data)
                seen += data
                if cut and self._cut_when is not None and self._cut_when(seen):
                    self.dropped.set()
                    break
        except OSError:
            pass
        finally:
            for s in (client, upstream):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
            up.join()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def close(self) -> None:
        with self._lock:
            self._closed = True
            socks = list(self._socks)
        self.hold.set()
        try:
            self._ln.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        except OSError:
            pass
        self._ln.close()
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._accepter.join()
        for t in self._threads:
            t.join()
