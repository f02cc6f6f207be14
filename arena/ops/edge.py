"""The production edge on one machine: nginx (``deploy/nginx.conf``) in front of gunicorn
(``deploy/gunicorn.conf.py``), as child processes.

The compose file runs the same two programs with the same two files; this module lets the
tests (``tests/deploy``) and ``bench/slow_clients.py`` run that shape on loopback, and an
operator run it on a host without containers.  :func:`render_nginx_conf` changes only the
lines of ``deploy/nginx.conf`` marked ``# templated`` (listen address, upstream address, log
and temp paths) and refuses a file whose templated lines it does not recognise, so what is
tested is what is shipped.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import requests

from .procs import Child

ROOT = Path(__file__).resolve().parents[2]
NGINX_CONF = ROOT / "deploy" / "nginx.conf"
GUNICORN_CONF = ROOT / "deploy" / "gunicorn.conf.py"

TEMPLATED = re.compile(r"^(?P<indent>\s*)(?P<directive>\S+)\s+(?P<value>.*?);\s*"
                       r"# templated(?::\s*(?P<tag>\w+))?\s*$")


class EdgeError(RuntimeError):
    pass


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)


def render_nginx_conf(text: str, *, listen: str, upstream: str | Sequence[str],
                      runtime_dir: Path, live_upstream: str = "127.0.0.1:8100") -> str:
    """``deploy/nginx.conf`` with its templated lines pointed at ``listen``, ``upstream`` (the
    web app: one address, or several web processes that nginx balances, one ``server`` line
    each), ``live_upstream`` (the live relay) and paths under ``runtime_dir``; every other
    line is kept byte for byte."""
    webs = [upstream] if isinstance(upstream, str) else list(upstream)
    if not webs:
        raise EdgeError("no web upstream given")
    logs, temp = runtime_dir / "logs", runtime_dir / "temp"
    out, seen = [], set()
    for line in text.splitlines(keepends=True):
        m = TEMPLATED.match(line.rstrip("\n"))
        if m is None:
            out.append(line)
            continue
        directive, value = m["directive"], m["value"]
        if directive == "listen":
            value = listen
        elif directive == "server" and m["tag"] != "live":
            seen.add(directive)
            out.extend(f"{m['indent']}server {web};\n" for web in webs)
            continue
        elif directive == "server":
            value = live_upstream
        elif directive in ("access_log", "error_log"):
            value = value.replace("/var/log/nginx/", f"{logs}/")
        elif directive.endswith("_temp_path"):
            value = value.replace("/var/cache/nginx/", f"{temp}/")
        else:
            raise EdgeError(f"unknown templated line in nginx.conf: {line.strip()}")
        seen.add(directive)
        out.append(f"{m['indent']}{directive} {value};\n")
    missing = {"listen", "server", "access_log", "client_body_temp_path"} - seen
    if missing:
        raise EdgeError(f"nginx.conf lacks templated {', '.join(sorted(missing))} lines")
    return "".join(out)


def wait_http(url: str, timeout_s: float = 60.0, child: Child | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        if child is not None and not child.alive():
            raise EdgeError(f"{child.name} exited with {child.proc.returncode}")
        try:
            r = requests.get(url, timeout=2)
            if r.status_code == 200:
                return
            last = f"status {r.status_code}"
        except requests.RequestException as exc:
            last = str(exc)
        time.sleep(0.05)
    raise EdgeError(f"{url} did not answer within {timeout_s}s ({last})")


def start_gunicorn(*, host: str, port: int, env: Mapping[str, str],
                   quiet: bool = True) -> Child:
    """gunicorn with ``deploy/gunicorn.conf.py`` (its ``HOST``/``PORT`` variables set)."""
    out = subprocess.DEVNULL if quiet else None
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "-c", str(GUNICORN_CONF), "arena:create_app()"],
        cwd=str(ROOT), env={**env, "HOST": host, "PORT": str(port)},
        stdin=subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    return Child("gunicorn", proc, url=f"http://{host}:{port}")


def start_nginx(*, listen_host: str, listen_port: int, upstream: str | Sequence[str],
                runtime_dir: Path, conf_text: str | None = None,
                live_upstream: str = "127.0.0.1:8100") -> Child:
    """nginx with ``deploy/nginx.conf`` rendered for this machine, in the foreground
    (``upstream``: the web process, or several: :func:`render_nginx_conf`)."""
    binary = nginx_binary()
    if binary is None:
        raise EdgeError("nginx is not installed (Debian: apt-get install nginx)")
    runtime_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("logs", "temp"):
        (runtime_dir / sub).mkdir(exist_ok=True)
    # nginx's workers run as an unprivileged user when the master is root: let them in.
    for d in (runtime_dir, runtime_dir / "logs", runtime_dir / "temp"):
        os.chmod(d, 0o755)
    text = conf_text if conf_text is not None else NGINX_CONF.read_text()
    conf = runtime_dir / "nginx.conf"
    conf.write_text(render_nginx_conf(text, listen=f"{listen_host}:{listen_port}",
                                      upstream=upstream, runtime_dir=runtime_dir,
                                      live_upstream=live_upstream))
    check = subprocess.run(
        [binary, "-t", "-q", "-p", str(runtime_dir), "-c", str(conf),
         "-g", f"pid {runtime_dir / 'nginx.pid'};"],
        capture_output=True, text=True, timeout=60, check=False)
    if check.returncode != 0:
        raise EdgeError(f"nginx -t refused the rendered config: {check.stderr.strip()}")
    with (runtime_dir / "logs" / "stderr.log").open("wb") as stderr:  # the child keeps a copy
        proc = subprocess.Popen(
            [binary, "-p", str(runtime_dir), "-c", str(conf),
             "-g", f"daemon off; pid {runtime_dir / 'nginx.pid'};"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True)
    return Child("nginx", proc, url=f"http://{listen_host}:{listen_port}")
