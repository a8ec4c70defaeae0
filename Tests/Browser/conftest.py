"""The stack the console's browser tests run against: a scratch database on the project's private PostgreSQL
cluster (scripts/pg), the APNs simulator (`livevisits apns-sim`) and `livevisits serve` sending to it, and
Debian's Chromium driven by Playwright (never `playwright install`: browsers cannot be downloaded here).

Environment: LIVEVISITS_DATABASE_URL (the cluster, as scripts/test exports it), LIVEVISITS_BIN (the built
`livevisits`), BROWSER_ARTIFACTS (where screenshots go; default a temporary directory)."""

import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"

try:
    from playwright.sync_api import expect, sync_playwright

    # An assertion waits as long as an action (the context's default below): the browser tests share two
    # cores with the Swift tests, and a page's first answer can take more than Playwright's 5 s then.
    expect.set_options(timeout=10_000)
except ImportError:  # a missing tool fails by name, it is never skipped
    sync_playwright = None


def require_tools():
    if sync_playwright is None:
        pytest.fail("missing tool: Playwright for Python (PyPI `playwright`; scripts/browser-test installs it)")
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"missing tool: {CHROMIUM} (Debian package `chromium`; scripts/deps installs it)")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def later_today(seconds=600):
    """A moment `seconds` from now, or earlier if that would leave the browser's (local) day: pages that show
    "today" without a date must not see the visit move to tomorrow when the run comes near midnight. The
    window may then lie in the past, which a booking accepts."""
    now = int(time.time())
    midnight = int(time.mktime(time.localtime(now)[:3] + (0, 0, 0, 0, 0, -1))) + 86_400
    return min(now + seconds, midnight - 2 * 3600)


def wait_for(what, check, within=20.0, every=0.1):
    """Polls `check` until it returns something truthy; fails naming `what` after `within` seconds."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within} s waiting for {what}")
        time.sleep(every)


class Stack:
    def __init__(self, work: Path):
        self.work = work
        self.processes = []
        self.bin = os.environ.get("LIVEVISITS_BIN") or str(
            Path(subprocess.check_output(["swift", "build", "--show-bin-path"], cwd=REPO, text=True).strip()) / "livevisits")
        if not os.access(self.bin, os.X_OK):
            pytest.fail(f"missing tool: the built livevisits at {self.bin} (run swift build first)")
        cluster = os.environ.get("LIVEVISITS_DATABASE_URL") or subprocess.check_output(
            [str(REPO / "scripts/pg"), "url"], text=True).strip()
        self.database = "lvtest_browser_" + uuid.uuid4().hex[:8]
        subprocess.run(["psql", cluster, "-qc", f"CREATE DATABASE {self.database}"], check=True)
        self.database_url = re.sub(r"/[^/?]*(\?|$)", f"/{self.database}\\1", cluster, count=1) \
            if cluster.startswith("postgres") else f"{cluster} dbname={self.database}"
        self.env = dict(os.environ, LIVEVISITS_DATABASE_URL=self.database_url, LIVEVISITS_LOG_LEVEL="warning")

        # The signing key the server signs with; the simulator verifies with its public half.
        key = work / "apns.p8"
        subprocess.run(f"openssl ecparam -name prime256v1 -genkey -noout | openssl pkcs8 -topk8 -nocrypt -out {key}",
                       shell=True, check=True, capture_output=True)
        self.env.update(LIVEVISITS_APNS_KEY_FILE=str(key), LIVEVISITS_APNS_KEY_ID="KEY1234567",
                        LIVEVISITS_APNS_TEAM_ID="TEAM123456", LIVEVISITS_APNS_BUNDLE_ID="com.example.visits",
                        LIVEVISITS_PROJECTIONS_DIR=str(REPO / "Projections"))
        subprocess.run([self.bin, "migrate"], env=self.env, check=True, capture_output=True, cwd=REPO)
        self.dispatcher = self.mint("dispatcher")
        self.ops = self.mint("ops")

        sim_port = free_port()
        sim_log = work / "apns-sim.log"
        self.start([self.bin, "apns-sim", "--port", str(sim_port), "--cert-dir", str(work / "sim-certs")], sim_log)
        ca = wait_for("the simulator's CA file line", lambda: re.search(r"ca file: (\S+)", sim_log.read_text()))
        self.sim_url = f"https://127.0.0.1:{sim_port}"
        self.sim_ca = ca.group(1)

        port = free_port()
        self.base = f"http://127.0.0.1:{port}"
        self.env.update(LIVEVISITS_HTTP_ADDR=f"127.0.0.1:{port}", LIVEVISITS_APNS_URL=self.sim_url,
                        LIVEVISITS_APNS_CA_FILE=self.sim_ca)
        # From another directory than the repository's: the console's files are in the binary.
        self.start([self.bin, "serve"], work / "serve.log", cwd=work)
        wait_for("the server's /readyz", lambda: self.ready())

    def start(self, argv, log: Path, cwd=REPO):
        out = open(log, "w")
        self.processes.append(subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT, cwd=cwd))

    def ready(self):
        try:
            with urllib.request.urlopen(self.base + "/readyz", timeout=2) as r:
                return r.status == 200
        except OSError:
            return False

    def mint(self, role, subject=None):
        argv = [self.bin, "keys", "create", "--role", role] + (["--subject", subject] if subject else [])
        out = subprocess.run(argv, env=self.env, check=True, capture_output=True, text=True, cwd=REPO).stdout
        return out.strip().splitlines()[-1]

    def api(self, method, path, body=None, key=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(self.base + path, data=data, method=method, headers={
            "Authorization": f"Bearer {key or self.dispatcher}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as r:
                text = r.read()
                return r.status, (json.loads(text) if text else None)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def book(self, visit_id, customer="c-1", first_name="Alex", technician="t-1"):
        now = int(time.time())
        status, body = self.api("POST", "/v1/visits", {
            "visitId": visit_id, "customerId": customer,
            "attributes": {"customerFirstName": first_name, "serviceAddress": "12 Elm Row", "jobSummary": "Boiler check"},
            "technician": {"id": technician, "name": "Sam", "avatarSymbol": "person.crop.circle", "vanDescription": "White van"},
            "arrivalWindow": {"start": now + 600, "end": now + 1800}, "kilometresAway": 12.0})
        assert status == 201, body
        return body

    def register_activity(self, visit_id, customer="c-1", activity="a-1"):
        key = self.mint("customer", customer)
        token = uuid.uuid4().hex + uuid.uuid4().hex
        status, body = self.api("PUT", f"/v1/visits/{visit_id}/live-activities/{activity}",
                                {"pushToken": token, "environment": "sandbox"}, key=key)
        assert status == 204, body
        return token

    def sim(self, method, path, body=None):
        """The simulator's control routes (HTTP/2 over TLS: through curl, as its docs say)."""
        argv = ["curl", "-fsS", "--http2", "--cacert", self.sim_ca, "-X", method, self.sim_url + path]
        if body is not None:
            argv += ["-H", "content-type: application/json", "-d", json.dumps(body)]
        return subprocess.run(argv, check=True, capture_output=True, text=True, timeout=10).stdout

    def stop(self):
        for p in reversed(self.processes):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in reversed(self.processes):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


@pytest.fixture(scope="session")
def artifacts():
    path = Path(os.environ.get("BROWSER_ARTIFACTS") or tempfile.mkdtemp(prefix="lv-browser-"))
    path.mkdir(parents=True, exist_ok=True)
    print(f"\nbrowser test screenshots: {path}")
    return path


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    require_tools()
    s = Stack(tmp_path_factory.mktemp("stack"))
    yield s
    s.stop()
    for log in ("serve.log", "apns-sim.log"):
        text = (s.work / log).read_text(errors="replace")
        # The key never reaches a log line.
        assert s.dispatcher not in text and s.ops not in text, f"{log} names an API key"


@pytest.fixture(scope="session")
def browser():
    require_tools()
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=30_000)
        yield b
        b.close()


@pytest.fixture
def context(browser):
    c = browser.new_context(viewport={"width": 1280, "height": 900})
    c.set_default_timeout(10_000)
    yield c
    c.close()
