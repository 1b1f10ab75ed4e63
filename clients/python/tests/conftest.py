"""The real parts the client's tests run against: ``finality sim serve``
(the providers' stand-in, settling every payment a second after it is
made and sending signed webhooks) and ``finality serve`` on an SQLite file
of its own, pushing events to a receiver in this process. All on loopback,
on free ports; stopped when the session ends."""

from __future__ import annotations

import base64
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

TOKEN = "client-tests-token-0123456789abcdef"
PUSH_SECRET = "whsec_" + base64.b64encode(b"client tests push secret 32 bytes!").decode()
SIM_SECRET = "whsec_" + base64.b64encode(b"client tests sim webhook secret!!").decode()


def binary() -> str:
    here = Path(__file__).resolve().parent
    return os.environ.get("FINALITY_BIN") or str(here.parents[2] / "target" / "debug" / "finality")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(url: str, seconds: float = 30.0) -> None:
    until = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError as e:
            if e.code < 500:
                return
        except OSError:
            pass
        if time.monotonic() > until:
            raise RuntimeError(f"{url} did not answer in {seconds} s")
        time.sleep(0.1)


@dataclass
class Stack:
    base: str
    sim: str
    pushes: list = field(default_factory=list)

    def provider_payment(self, merchant_ref: str | None = None) -> str:
        """A payment made at the simulated provider: its id there."""
        body = {"amount": 1999, "currency": "USD"}
        if merchant_ref:
            body["merchant_ref"] = merchant_ref
        req = urllib.request.Request(
            f"{self.sim}/v1/payments",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(req, timeout=5) as r:
            return json.load(r)["id"]


@pytest.fixture(scope="session")
def stack():
    tmp = Path(tempfile.mkdtemp(prefix="finality-py-client-"))
    port, sim_port = free_port(), free_port()
    pushes: list = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (the standard library's name)
            n = int(self.headers.get("content-length", "0"))
            pushes.append((dict(self.headers.items()), self.rfile.read(n)))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args):
            pass

    receiver = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=receiver.serve_forever, daemon=True).start()
    config = tmp / "finality.toml"
    config.write_text(
        f"""[server]
listen = "127.0.0.1:{port}"
[database]
url = "sqlite://{tmp / 'finality.db'}"
[providers.sim]
adapter = "sim"
base_url = "http://127.0.0.1:{sim_port}"
webhook_secret_envs = ["CLIENT_TESTS_SIM_SECRET"]
schedule = {{ kind = "fixed", delays = ["2s"] }}
# The same provider, giving up after one query: a payment it cannot find
# goes to the review queue at once.
[providers.sim_review]
adapter = "sim"
base_url = "http://127.0.0.1:{sim_port}"
schedule = {{ kind = "fixed", delays = ["1s"] }}
max_attempts = 1
[[events.http]]
name = "client-tests"
url = "http://127.0.0.1:{receiver.server_address[1]}/push"
secret_env = "CLIENT_TESTS_PUSH_SECRET"
"""
    )
    env = dict(os.environ)
    env.pop("FINALITY_DATABASE_URL", None)
    env.update(
        FINALITY_API_TOKEN=TOKEN,
        CLIENT_TESTS_SIM_SECRET=SIM_SECRET,
        CLIENT_TESTS_PUSH_SECRET=PUSH_SECRET,
    )
    # Warnings and errors only: a failing test's cause, not every request.
    env.setdefault("RUST_LOG", "warn")
    children = [
        subprocess.Popen(
            [binary(), "sim", "serve", "--listen", f"127.0.0.1:{sim_port}",
             "--settle-after", "1s",
             "--webhook-url", f"http://127.0.0.1:{port}/webhooks/sim",
             "--webhook-secret-env", "CLIENT_TESTS_SIM_SECRET"],
            env=env, stdout=subprocess.DEVNULL,
        ),
        subprocess.Popen(
            [binary(), "--config", str(config), "serve"], env=env, stdout=subprocess.DEVNULL
        ),
    ]
    try:
        wait_for(f"http://127.0.0.1:{sim_port}/v1/payments/none")
        wait_for(f"http://127.0.0.1:{port}/healthz")
        yield Stack(base=f"http://127.0.0.1:{port}", sim=f"http://127.0.0.1:{sim_port}", pushes=pushes)
    finally:
        for c in children:
            c.terminate()
        for c in children:
            try:
                c.wait(timeout=30)
            except subprocess.TimeoutExpired:
                c.kill()
        receiver.shutdown()
        shutil.rmtree(tmp, ignore_errors=True)
