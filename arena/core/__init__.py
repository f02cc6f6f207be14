"""The core: what every other room stands on, and nothing above it.

Settings (:mod:`.config`), the tables (:mod:`.models`, :mod:`.tournament_models`), the
database (:mod:`.storage`), Redis and the queue (:mod:`.queue`, :mod:`.embedded_redis`, and
the deployment's namespace in Redis, :mod:`.rediskeys`),
secrets and signing (:mod:`.security`, :mod:`.signing`), scrubbing URLs (:mod:`.privacy`),
rating families (:mod:`.families`), and two process-wide tools: bookkeeping slots
(:mod:`.bookkeeping`) and the garbage collector's settings (:mod:`.heap`).
"""
