"""jupyterhub_config.py of the three-learner hub test (tests/hub/test_hub.py), read by `jupyterhub -f`.

A hub as a teacher would run one on a single server: JupyterHub on 127.0.0.1, its configurable-http-proxy, the
dummy authenticator with one shared password, and the local-process spawner starting each learner's server as
that learner's system user, in their home. The test passes its ports, token and paths in MF_HUB_* variables.

One addition to the spawner, for this machine only: its Python sits under /root (mode 700), where a learner's
user cannot reach it, so each learner's server starts in a mount namespace of its own in which the interpreter's
folders are mounted back (course.run.sandbox's way, as the grader does for a learner's kernel). A hub's Python lives
in /usr or /opt, where none of this is needed.
"""

import json
import os
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

from mercadofresco.course.run import sandbox

c = get_config()  # noqa: F821 (JupyterHub's config loader defines it)
setting = json.loads(os.environ["MF_HUB_SETTINGS"])
folder = Path(setting["folder"])


class WorkbookSpawner(LocalProcessSpawner):
    """LocalProcessSpawner whose learner's server can run this machine's Python (see the module's docstring)."""

    def make_preexec_fn(self, name):
        become_learner = super().make_preexec_fn(name)

        def preexec():
            libc = sandbox._libc()
            sandbox._call(libc.unshare(sandbox.CLONE_NEWNS), "unshare")
            sandbox._call(libc.mount(None, b"/", None, sandbox.MS_REC | sandbox.MS_PRIVATE, None), "make / private")
            sandbox._reach_python(libc)
            become_learner()

        return preexec


c.JupyterHub.bind_url = f"http://127.0.0.1:{setting['port']}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{setting['hub_port']}"
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{setting['proxy_api_port']}"
c.ConfigurableHTTPProxy.command = [setting["proxy"]]
c.ConfigurableHTTPProxy.pid_file = str(folder / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{folder / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(folder / "cookie_secret")
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = setting["password"]
c.Authenticator.allowed_users = set(setting["learners"])
c.JupyterHub.services = [{"name": "course", "api_token": setting["token"]}]
c.JupyterHub.load_roles = [
    {"name": "course", "scopes": ["admin:users", "admin:servers", "access:servers"], "services": ["course"]}
]
c.JupyterHub.spawner_class = WorkbookSpawner
c.Spawner.cmd = [str(Path(sys.executable).with_name("jupyterhub-singleuser"))]
c.Spawner.ip = "127.0.0.1"
c.Spawner.default_url = "/lab"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.env_keep = ["PATH", "LANG"]  # not PYTHONPATH or the test run's JUPYTER_* folders
c.Spawner.environment = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
# The image's Jupyter configuration (binder/postBuild puts binder/jupyter_server_config.json in the environment's
# etc/jupyter): the test's copy of it, in a folder every learner can read, as the first place a server looks.
c.Spawner.environment["JUPYTER_CONFIG_PATH"] = setting["jupyter_config"]
