"""The compose file wires the shipped files together as the slow-client test runs them: nginx
with deploy/nginx.conf on the published port, gunicorn unpublished behind it, the app
trusting exactly that one proxy; and Prometheus scrapes every process where compose serves
its metrics, Grafana's dashboard asks for metrics the service exports.  (Text checks: no
YAML parser is a dependency.)"""

from __future__ import annotations

import json
import re
from pathlib import Path

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


# --- metrics: prometheus and grafana -------------------------------------------------------

DEPLOY = COMPOSE.parent
PROMETHEUS = DEPLOY / "prometheus.yml"
GRAFANA = DEPLOY / "grafana"
DASHBOARD = GRAFANA / "dashboards" / "arena.json"


def env_value(block: str, name: str) -> str:
    m = re.search(rf'^\s+{name}: "([^"]*)"', block, re.M)
    assert m, f"{name} is not set in {block!r}"
    return m.group(1)


def scrape_job(name: str) -> str:
    text = PROMETHEUS.read_text()
    m = re.search(rf"^  - job_name: {name}\n((?:    .*\n|\s*\n)+)", text, re.M)
    assert m, f"no scrape job {name} in {PROMETHEUS}"
    return m.group(1)


def test_prometheus_scrapes_every_process_where_compose_serves_its_metrics() -> None:
    upstream = re.search(r"^\s*server (\S+):(\d+);\s*# templated", NGINX_CONF.read_text(), re.M)
    assert upstream
    web = scrape_job("arena-web")
    assert f'targets: ["web:{upstream.group(2)}"]' in web and "metrics_path: /metrics" in web
    assert "credentials_file: /run/secrets/metrics_token" in web
    prometheus = service("prometheus")
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in prometheus
    assert "- metrics_token" in prometheus
    assert re.search(r"^  metrics_token:\n    environment: METRICS_TOKEN$", COMPOSE.read_text(),
                     re.M)
    worker, live = service("worker"), service("live")
    for block in (worker, live):
        assert env_value(block, "METRICS_HOST") == "0.0.0.0"
    for job, port in (("arena-worker", env_value(worker, "WORKER_METRICS_PORT")),
                      ("arena-clock", env_value(worker, "CLOCK_METRICS_PORT"))):
        block = scrape_job(job)
        assert 'names: ["worker"]' in block and f"port: {port}" in block
        assert f'"{port}"' in worker  # exposed on the compose network
    assert f'targets: ["live:{env_value(live, "LIVE_METRICS_PORT")}"]' in scrape_job("arena-live")
    for name in ("web", "worker", "live", "proxy"):
        assert "9090" not in service(name)


def test_grafana_loads_the_dashboard_from_prometheus() -> None:
    grafana = service("grafana")
    assert "./grafana/provisioning:/etc/grafana/provisioning:ro" in grafana
    m = re.search(r"\./grafana/dashboards:(\S+):ro", grafana)
    assert m
    provider = (GRAFANA / "provisioning" / "dashboards" / "arena.yml").read_text()
    assert f"path: {m.group(1)}" in provider
    source = (GRAFANA / "provisioning" / "datasources" / "prometheus.yml").read_text()
    assert "url: http://prometheus:9090" in source and '"9090"' in service("prometheus")
    uid = re.search(r"uid: (\S+)", source)
    assert uid
    dashboard = json.loads(DASHBOARD.read_text())
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    assert len(panels) >= 20
    for p in panels:
        assert p["datasource"]["uid"] == uid.group(1), p["title"]
        assert p["targets"] and all(t["expr"] for t in p["targets"]), p["title"]
    assert '"127.0.0.1:3000:3000"' in grafana  # Grafana on loopback only


def exported_names() -> set[str]:
    """Every metric name the service exports: the definitions of arena.core.metrics and the
    gauges the queue collector makes at scrape time."""
    from prometheus_client.metrics import MetricWrapperBase

    from arena.core import metrics, queue_report

    names = set()
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            names.add(value._name)
    names |= set(re.findall(r'GaugeMetricFamily\("(\w+)"',
                            Path(queue_report.__file__).read_text()))
    return names


def test_every_dashboard_query_names_a_metric_the_service_exports() -> None:
    names = exported_names()
    assert "arena_bot_call_deadline_overshoot_seconds" in names
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        for target in panel.get("targets", []):
            for used in re.findall(r"\b(arena_\w+)", target["expr"]):
                base = re.sub(r"_(bucket|sum|count|total)$", "", used)
                assert used in names or base in names or base + "_total" in names \
                    or used.removesuffix("_total") in names, (panel["title"], used)


def test_nginx_never_serves_metrics_and_passes_its_request_id() -> None:
    conf = NGINX_CONF.read_text()
    assert re.search(r"location = /metrics \{\s*default_type application/json;\s*return 404",
                     conf)
    assert conf.count("proxy_set_header X-Request-ID $request_id;") == 2
