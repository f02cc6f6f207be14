"""The compose file wires the shipped files together as the slow-client test runs them: nginx
with deploy/nginx.conf on the published port, gunicorn unpublished behind it, the app
trusting exactly that one proxy.  (Text checks: no YAML parser is a dependency.)"""

from __future__ import annotations

import re

from arena.ops.edge import GUNICORN_CONF, NGINX_CONF

COMPOSE = NGINX_CONF.parent / "docker-compose.yml"


def service(name: str) -> str:
    text = COMPOSE.read_text()
    m = re.search(rf"^  {name}:\n((?:    .*\n|\s*\n)+)", text, re.M)
    assert m, f"no service {name} in {COMPOSE}"
    return m.group(1)


def test_nginx_is_the_only_published_door_and_the_app_trusts_one_hop() -> None:
    conf = NGINX_CONF.read_text()
    listen = re.search(r"^\s*listen (\d+);\s*# templated", conf, re.M)
    upstream = re.search(r"^\s*server (\S+):(\d+);\s*# templated", conf, re.M)
    assert listen and upstream
    proxy = service("proxy")
    assert "./nginx.conf:/etc/nginx/nginx.conf:ro" in proxy
    assert f'"8000:{listen.group(1)}"' in proxy
    web = service("web")
    assert "ports:" not in web and f'"{upstream.group(2)}"' in web
    assert upstream.group(1) == "web"
    assert 'TRUSTED_PROXY_HOPS: "1"' in web
    assert "os.environ.get('PORT', '8000')" in GUNICORN_CONF.read_text()
    assert "proxy_set_header X-Forwarded-For $remote_addr;" in conf
