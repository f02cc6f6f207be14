"""``GET /metrics``: the web tier's Prometheus metrics, for Prometheus only.

Protected by a bearer token (``METRICS_TOKEN``, a read-only credential for Prometheus; the
``ADMIN_TOKEN`` works too): request latencies name the routes the service has, and the queue
gauges say how busy it is, which is nobody else's business.  Without either token set the
endpoint does not exist (404); a wrong or missing token gets 404 as well, so the endpoint
cannot be told from a missing page.  The shipped nginx refuses ``/metrics`` from the
outside anyway: Prometheus scrapes gunicorn directly, on the private network.

Under gunicorn the answer adds up every worker process's metrics (multiprocess mode,
:mod:`arena.core.metrics`), plus the queue and match gauges read at the scrape
(:class:`arena.core.queue_report.QueueCollector`).
"""

from __future__ import annotations

from flask import Blueprint, Response, current_app

from arena.core import metrics
from arena.core.queue_report import QueueCollector
from arena.core.security import bearer_token, may_read_metrics
from arena.web.errors import error_response
from arena.web.openapi import operation

bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
@operation("Prometheus metrics of the web tier (for Prometheus; not part of the API)",
           {200: ("text/plain", "the Prometheus text format")},
           errors={404: "no METRICS_TOKEN (or ADMIN_TOKEN) in Authorization: Bearer"},
           description="Send Authorization: Bearer METRICS_TOKEN.  docs/operations.md, "
           "Metrics, lists every metric.")
def scrape() -> Response:
    if not may_read_metrics(bearer_token()):
        return error_response(404, "not_found", "no such page")
    app = current_app._get_current_object()  # type: ignore[attr-defined]
    body, content_type = metrics.exposition([QueueCollector(app)])
    return Response(body, content_type=content_type,
                    headers={"Cache-Control": "no-store"})
