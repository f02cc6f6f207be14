"""Gunicorn settings for the web process (``Procfile``: ``web: gunicorn -c deploy/gunicorn.conf.py
"arena:create_app()"``).  Every value can be overridden by the environment variable named.

Threads, not only processes: submitting a bot waits for its health check (a few seconds at
most), which must not hold a whole process.
"""

import os

bind = f"{os.environ.get('HOST', '0.0.0.0')}:{os.environ.get('PORT', '8000')}"
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
worker_class = "gthread"
threads = int(os.environ.get("WEB_THREADS", "8"))
timeout = int(os.environ.get("WEB_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
max_requests = 2000  # recycle workers now and then
max_requests_jitter = 200
accesslog = "-"
errorlog = "-"
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1")
# The app is built in each worker (not preloaded): every process opens its own database
# pool and Redis connection.
preload_app = False
