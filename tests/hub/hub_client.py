"""A JupyterHub driven through its own API, as a teacher's script or a learner's browser would (issue 25).

The hub's REST API starts and stops each learner's server; through the hub's proxy, the learner's own Jupyter
server runs nbgitpuller (the teacher's link) and the notebook's kernel, whose cells go over the kernel's
websocket as JupyterLab sends them. Outputs are compared with the committed ones the way strict nbval compares
them: the same fields skipped, streams joined, tests/nbval_sanitize.cfg's patterns replaced.
"""

from __future__ import annotations

import datetime as dt
import http.cookiejar
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat
import websocket
from nbformat import NotebookNode
from nbval.plugin import coalesce_streams, transform_streams_for_comparison

ROOT = Path(__file__).resolve().parents[2]
from tools.nbtools import nbval_sanitizers  # noqa: E402

SANITIZE = nbval_sanitizers()  # tests/nbval_sanitize.cfg
# What strict nbval leaves out of a comparison (nbval.plugin.IPyNbFile.skip_compare, without nbdime).
SKIPPED = {"metadata", "traceback", "prompt_number", "output_type", "name", "execution_count"}
SKIPPED |= {"application/vnd.jupyter.widget-view+json", "image/png", "image/jpeg"}


class HubError(RuntimeError):
    """The hub, or a learner's server behind it, did not answer as its API says."""


@dataclass
class Hub:
    """A running hub: its public URL (the proxy) and a token of a service allowed to manage users and servers."""

    url: str
    token: str

    def request(self, method: str, path: str, body: dict | None = None, timeout: float = 30) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"token {self.token}", "Content-Type": "application/json"}
        call = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(call, timeout=timeout) as answer:
                text = answer.read().decode()
        except urllib.error.HTTPError as exc:
            raise HubError(f"{method} {path}: HTTP {exc.code} {exc.read().decode()[:500]}") from exc
        return json.loads(text) if text.strip() else None

    def start_server(self, user: str, timeout: float = 90) -> None:
        """Ask the hub for the learner's server (POST /hub/api/users/NAME/server) and wait until it is ready."""
        servers = (self.request("GET", f"/hub/api/users/{user}") or {}).get("servers", {})
        if "" not in servers:  # started already (or starting): asking again is HTTP 400, "already running"
            self.request("POST", f"/hub/api/users/{user}/server")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            server = (self.request("GET", f"/hub/api/users/{user}") or {}).get("servers", {}).get("", {})
            if server.get("ready"):
                return
            time.sleep(0.25)
        raise HubError(f"{user}'s server was not ready after {timeout:.0f} s")

    def stop_server(self, user: str) -> None:
        self.request("DELETE", f"/hub/api/users/{user}/server")

    def pull(self, user: str, repo: str, target: str, branch: str = "main", timeout: float = 90) -> str:
        """nbgitpuller in the learner's server: clone `repo` into `target` in their home; its log."""
        query = urllib.parse.urlencode({"repo": repo, "branch": branch, "targetpath": target})
        call = urllib.request.Request(
            f"{self.url}/user/{user}/git-pull/api?{query}", headers={"Authorization": f"token {self.token}"}
        )
        log = []
        with urllib.request.urlopen(call, timeout=timeout) as stream:  # server-sent events, one per line of git
            for raw in stream:
                line = raw.decode().strip()
                if not line.startswith("data:"):
                    continue
                event = json.loads(line[len("data:") :])
                log.append(event.get("output") or event.get("message") or "")
                if event.get("phase") == "finished":
                    return "".join(log)
                if event.get("phase") == "error":
                    raise HubError(f"nbgitpuller for {user}: {event.get('message')}\n{''.join(log)}")
        raise HubError(f"nbgitpuller for {user} ended without finishing:\n{''.join(log)}")

    def kernel(self, user: str, path: str) -> Kernel:
        """A kernel for the notebook at `path` (relative to the learner's home), started as JupyterLab does."""
        body = {"path": path, "type": "notebook", "name": Path(path).name, "kernel": {"name": "python3"}}
        session = self.request("POST", f"/user/{user}/api/sessions", body)
        ws_url = self.url.replace("http://", "ws://") + f"/user/{user}/api/kernels/{session['kernel']['id']}/channels"
        return Kernel(self, user, session["id"], ws_url, session["kernel"]["id"])


def login(hub_url: str, user: str, password: str) -> bool:
    """Log in at the hub's own login form, as a learner does; True when the hub accepted the password."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar), _Stay())
    with opener.open(f"{hub_url}/hub/login", timeout=30) as page:
        form = page.read().decode()
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', form)
    fields = {"username": user, "password": password, **({"_xsrf": xsrf.group(1)} if xsrf else {})}
    try:
        with opener.open(f"{hub_url}/hub/login?next=", urllib.parse.urlencode(fields).encode(), timeout=30):
            pass
    except urllib.error.HTTPError as exc:
        if exc.code == 403:
            return False
        if exc.code != 302:  # the hub's answer to a good password: a redirect, not followed (see _Stay)
            raise
    return any(cookie.name.startswith("jupyterhub-") and "session" in cookie.name for cookie in jar)


class _Stay(urllib.request.HTTPRedirectHandler):
    """Follow no redirect. After a login the hub sends the browser on to /hub/spawn, which starts the learner's
    server: a login that followed it started a server the test had not asked for, and the test's own start then
    met "already running" (HTTP 400), 1 run in 4."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Kernel:
    """One notebook's kernel in a learner's server, reached through the hub's proxy by its websocket."""

    def __init__(self, hub: Hub, user: str, session_id: str, ws_url: str, kernel_id: str = "") -> None:
        self.hub, self.user, self.session_id, self.kernel_id = hub, user, session_id, kernel_id
        self.session = uuid.uuid4().hex
        self.socket = websocket.create_connection(ws_url, header=[f"Authorization: token {hub.token}"], timeout=120)

    def execute(self, code: str, timeout: float = 120) -> list[dict]:
        """Run `code` as a cell; its outputs in nbformat's shape (what the notebook would store)."""
        msg_id = uuid.uuid4().hex
        header = {"msg_id": msg_id, "msg_type": "execute_request", "username": self.user, "session": self.session}
        header |= {"date": dt.datetime.now(dt.UTC).isoformat(), "version": "5.3"}
        content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}}
        content |= {"allow_stdin": False, "stop_on_error": True}
        message = {"header": header, "parent_header": {}, "metadata": {}, "content": content, "channel": "shell"}
        self.socket.send(json.dumps(message))
        outputs: list[dict] = []
        idle = replied = False
        deadline = time.monotonic() + timeout
        while not (idle and replied):
            if time.monotonic() > deadline:
                raise HubError(f"{self.user}'s kernel did not finish a cell in {timeout:.0f} s")
            frame = self.socket.recv()
            if isinstance(frame, bytes):  # a message with binary buffers (a widget's): not an output
                continue
            reply = json.loads(frame)
            if reply.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, body = reply["msg_type"], reply["content"]
            if kind == "execute_reply":
                replied = True
            elif kind == "status" and body["execution_state"] == "idle":
                idle = True
            elif kind == "stream":
                outputs.append(NotebookNode(output_type="stream", name=body["name"], text=body["text"]))
            elif kind in ("execute_result", "display_data"):
                outputs.append(NotebookNode(output_type=kind, data=body["data"], metadata=body.get("metadata", {})))
            elif kind == "error":
                fields = {key: body[key] for key in ("ename", "evalue", "traceback")}
                outputs.append(NotebookNode(output_type="error", **fields))
            # clear_output is not applied, as nbval does not apply it
        return outputs

    def close(self) -> None:
        self.socket.close()
        self.hub.request("DELETE", f"/user/{self.user}/api/sessions/{self.session_id}")


def run_notebook(hub: Hub, user: str, home_path: str, committed: Path) -> list[str]:
    """Run every code cell of the notebook in the learner's server; the cells whose outputs differ (nbval's way)."""
    notebook = nbformat.read(committed, as_version=4)
    kernel = hub.kernel(user, home_path)
    problems = []
    try:
        for number, cell in enumerate(notebook.cells):
            if cell.cell_type != "code" or "nbval-skip" in cell.metadata.get("tags", []):
                continue
            outputs = kernel.execute(cell.source)
            errors = [output for output in outputs if output.output_type == "error"]
            if errors:  # nbval fails a cell that raises, whatever its committed outputs
                problems.append(f"cell {number} raised {errors[0].ename}: {errors[0].evalue}")
            elif "nbval-ignore-output" not in cell.metadata.get("tags", []) and cell.execution_count is not None:
                difference = compare(cell.outputs, outputs)
                if difference:
                    problems.append(f"cell {number}: {difference}")
    finally:
        kernel.close()
    return problems


def compare(committed: list, ran: list) -> str | None:
    """None when the outputs agree as strict nbval sees them; else what differs first."""
    wanted, got = _flattened(committed), _flattened(ran)
    if set(wanted) != set(got):
        extra = {key: got[key] for key in set(got) - set(wanted)}
        return f"output fields {sorted(wanted)} were committed, the run gave {sorted(got)} (new: {extra!r:.300})"
    for key, values in wanted.items():
        if values != got[key]:
            return f"{key}: committed {values!r:.400}, the run gave {got[key]!r:.400}"
    return None


def _flattened(outputs: list) -> dict[str, list]:
    flat: dict[str, list] = defaultdict(list)
    for output in transform_streams_for_comparison(coalesce_streams(list(outputs))):
        for key, value in output.items():
            if key == "data":
                for mime, data in value.items():
                    if mime not in SKIPPED:
                        flat[mime].append(_sanitized(data))
            elif key not in SKIPPED:
                flat[key].append(_sanitized(value))
    return dict(flat)


def _sanitized(value: Any) -> Any:
    if isinstance(value, list):
        value = "".join(value)
    if not isinstance(value, str):
        return value
    for pattern, replacement in SANITIZE:
        value = pattern.sub(replacement, value)
    return value
