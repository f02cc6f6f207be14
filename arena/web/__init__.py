"""What every route shares: errors (:mod:`.errors`, :mod:`.error_pages`), rate limits
(:mod:`.limits`), ``Idempotency-Key`` (:mod:`.idempotency`), response caches
(:mod:`.readcache`, :mod:`.sharedcache`), pagination, a bot's owner in this browser
(:mod:`.owners`), the per-request deadline, SVG charts, the request and response shapes
(:mod:`.shapes`), and the OpenAPI document with its reference page (:mod:`.openapi`,
:mod:`.apidocs`).  Imports only :mod:`arena.core`.
"""
