"""Every tunable of the arena service, named once, with its default and what it does.

Configuration is layered (see :func:`arena.create_app`):

1. the defaults below (``Defaults``),
2. environment variables of the same name (``DATABASE_URL=... arena serve``), converted to
   the type of the default (booleans accept ``1/0``, ``true/false``, ``yes/no``, ``on/off``),
3. the mapping passed to ``create_app(test_config)`` (tests, the demo).

Production differs from the embedded default by configuration only: set ``DATABASE_URL``
(PostgreSQL), ``REDIS_URL``, ``SECRET_KEY`` and ``ADMIN_TOKEN``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from typing import Any


class Defaults:
    """Default values.  Each attribute is one setting; its docstring says what it does."""

    # --- storage -------------------------------------------------------------------------
    DATABASE_URL: str = ""
    """SQLAlchemy URL of the database (``postgresql+psycopg://user@host/db`` in production).
    Empty: an SQLite file ``arena.sqlite3`` in the instance folder."""
    DATABASE_ECHO: bool = False
    """Log every SQL statement (debugging)."""
    SQLITE_BUSY_TIMEOUT_S: float = 30.0
    """How long an SQLite writer waits for the lock before failing."""
    DATABASE_POOL_SIZE: int = 5
    """Database connections each process keeps open (SQLAlchemy pool).  A worker's matches
    hold a connection only for their claim, their finish and the shared lease renewal, never
    while bots think, so a few serve a hundred concurrent matches (see the capacity plan in
    docs/operations.md)."""
    DATABASE_MAX_OVERFLOW: int = 5
    """Extra connections a process may open beyond DATABASE_POOL_SIZE at a peak (closed
    again when returned)."""
    DATABASE_POOL_TIMEOUT_S: float = 30.0
    """How long a thread waits for a free pooled connection before its transaction fails."""
    STARTUP_DB_WAIT_S: float = 60.0
    """How long ``arena serve``, ``worker`` and ``clock`` wait at start for a database that
    does not answer yet (PostgreSQL started at the same time), trying again with a doubling
    back-off and logging each attempt, before they exit with status 1 (``database
    unreachable at ...``).  A database that answers at another schema revision ends them at
    once (run ``arena init-db``).  0: one attempt.  The embedded SQLite database is
    migrated by them instead (:mod:`arena.ops.startup`)."""
    DATABASE_CONNECT_TIMEOUT_S: float = 5.0
    """How long a PostgreSQL connection attempt waits for a host (libpq's
    ``connect_timeout``, whole seconds, at least 2), per host of a multi-host
    ``DATABASE_URL``: a primary that vanished (no answer at all) is given up after this
    long and the next host tried, instead of TCP's minutes.  0: libpq's default (forever).
    A ``connect_timeout`` in the URL wins."""
    DATABASE_STATEMENT_TIMEOUT_MS: int = 0
    """Longest time one SQL statement may run on PostgreSQL (``statement_timeout``; 0: no
    limit).  ``deploy/gunicorn.conf.py`` sets it for the web process to its request deadline
    (``WEB_REQUEST_TIMEOUT_S``), so a runaway query ends instead of holding a thread."""

    # --- queue ---------------------------------------------------------------------------
    REDIS_URL: str = ""
    """Redis for the job queue (``redis://host:6379/0``).  Empty: the instance's processes
    share a private Redis on a unix socket, stopped once none of them is left."""
    REDIS_SENTINELS: str = ""
    """Redis Sentinel: the sentinels to ask where the primary is, ``host:port,host:port``
    (IPv6 in brackets).  Set, it wins over ``REDIS_URL``: every Redis client of every process
    (queue, workers, limits, caches, live relay, clock) follows the primary through a
    failover by itself (docs/operations.md, "Redis Sentinel").  Empty: no Sentinel."""
    REDIS_SENTINEL_SERVICE: str = "arena"
    """The name the sentinels know the primary by (``sentinel monitor <name> ...``)."""
    REDIS_PASSWORD: str = ""
    """Password of the primary and its replicas when found through ``REDIS_SENTINELS``
    (their ``requirepass``; empty: none).  With ``REDIS_URL`` the URL carries it."""
    REDIS_SENTINEL_PASSWORD: str = ""
    """Password of the sentinels themselves (their ``requirepass``; empty: none)."""
    QUEUE_NAME: str = "arena"
    """Name of the RQ queue that match and health-check jobs go to."""
    REDIS_NAMESPACE: str = ""
    """Prefix of every key the arena keeps in Redis (the queue and all of RQ's keys under
    ``<ns>:rq:``, rate limits, caches, live streams, the clock's leader lock, bots' kept
    calls; :mod:`arena.core.rediskeys`), so deployments sharing one Redis never meet.
    Empty: ``arena-`` and 8 hex digits derived from DATABASE_URL's hosts, ports and
    database name (``arena`` with the embedded SQLite database).  Every process of one
    deployment must end up with the same value (``arena config`` shows it): set it
    explicitly when their DATABASE_URLs are spelled differently.  Letters, digits, ``_ . -``."""
    EMBEDDED_REDIS_DIR: str = ""
    """Where the embedded Redis keeps its socket, leases and log.  Empty:
    ``$TMPDIR/arena-<hash of the instance path>``."""

    # --- security ------------------------------------------------------------------------
    SECRET_KEY: str = ""
    """Server secret; also the default token pepper.  Empty: a random key is created once in
    ``<instance>/secret_key`` (fine for one machine; set it explicitly for several)."""
    TOKEN_PEPPER: str = ""
    """Key of the HMAC-SHA256 that bot owner tokens are stored under.  Empty: SECRET_KEY.
    Changing it invalidates every owner token."""
    SIGNING_KEY: str = ""
    """Key that every bot's request-signing secret is derived from (``arena.core.signing``).
    Empty: SECRET_KEY.  Changing it changes every bot's secret at once (owners must rotate
    to learn the new one), so give it a value of its own and keep it."""
    SIGNATURE_V1: bool = True
    """Also send the version 1 signature header (``X-BigTwo-Signature``, under the bot's
    current secret) with every request to a bot, beside version 2 (``X-BigTwo-Signatures``,
    which binds the method, path and a request id and so cannot be replayed).  On during the
    transition, so bots written against version 1 keep working; the default turns off on
    2027-03-01 (docs/protocol.md, "Transition from version 1").  Turn it off sooner on a
    deployment whose bots all verify version 2."""
    SIGNING_ROTATION_GRACE_S: float = 3600.0
    """After an owner rotates a bot's signing secret, how long (seconds) the arena signs
    with both the new and the previous secret (two ``v2=`` entries), so the bot keeps
    answering, and is not benched, while its owner restarts it with the new one.  An hour
    covers a redeploy by hand; a leaked secret is rotated with ``grace: false`` instead,
    which stops the old one at once.  0: no grace."""
    ADMIN_TOKEN: str = ""
    """Bearer token of the operator (creates matches, runs ladder rounds).  Empty: the admin
    API is disabled."""
    ALLOW_PRIVATE_BOT_URLS: bool = False
    """Let bots live on loopback and private addresses (local demo and tests only: on a
    public service this would let anyone make the referee call into the operator's
    network)."""
    MAX_CONTENT_LENGTH: int = 64 * 1024
    """Largest request body accepted, in bytes; larger ones get a JSON 413."""
    MAX_JSON_DEPTH: int = 16
    """Deepest nesting of arrays and objects accepted in a JSON body (ours need 3); deeper
    bodies get a JSON 400 before they are parsed."""
    MIN_SECRET_LENGTH: int = 32
    """Shortest ``SECRET_KEY``, ``TOKEN_PEPPER``, ``SIGNING_KEY`` and ``ADMIN_TOKEN`` the
    service starts with (outside ``DEBUG``/``TESTING``); placeholders such as
    ``replace-with-...`` or ``change-me`` are refused whatever their length."""
    TRUSTED_PROXY_HOPS: int = 0
    """How many reverse proxies in front of the app set ``X-Forwarded-For`` and
    ``X-Forwarded-Proto`` (1 behind the shipped nginx).  0: those headers are ignored and
    the client is the TCP peer, so nobody can pose as another address."""
    COOKIE_SECURE: str = "auto"
    """``Secure`` flag of the session (CSRF) cookie: ``auto`` (when the request came over
    HTTPS, as the trusted proxy reports it), ``always`` or ``never``."""
    COOKIE_SAMESITE: str = "Lax"
    """``SameSite`` attribute of the session (CSRF) cookie: ``Lax`` or ``Strict``."""

    # --- rate limits ---------------------------------------------------------------------
    RATE_LIMITS_ENABLED: bool = True
    """Whether the limits below apply (off in ``arena demo`` and in tests that do not test
    them).  Counters live in the service's Redis (``REDIS_URL`` or the embedded one), shared
    by every web process with the same ``QUEUE_NAME``; while Redis is down each process
    counts on its own."""
    RATE_LIMIT_BOT_SUBMIT_PER_CLIENT: str = "10 per hour;3 per minute"
    """Bot submissions (``POST /api/bots``, the web form) per client address (IPv6: per
    /64), in the ``limits`` notation (``N per second|minute|hour|day``, ``;``-separated)."""
    RATE_LIMIT_URL_CHANGE_PER_CLIENT: str = "30 per hour;5 per minute"
    """URL changes of bots (``PATCH /api/bots/<id>`` with a ``url``) per client address."""
    RATE_LIMIT_URL_CHANGE_PER_OWNER: str = "20 per hour;3 per minute"
    """URL changes per owner token (whatever address they come from)."""
    RATE_LIMIT_DOWNLOADS_PER_CLIENT: str = "60 per minute"
    """Expensive downloads per client address: match logs (JSON, JSONL, replay) and
    tournament archives."""
    RATE_LIMIT_PAGES_PER_CLIENT: str = "300 per minute"
    """Leaderboard pages, lists and searches (``/api/ratings``, ``/leaderboard``,
    ``/api/bots``, ``/api/matches``, ...) per client address."""
    RATE_LIMIT_ADMIN_PER_CLIENT: str = "120 per minute"
    """Operator API calls (matches, ladder rounds, tournaments) per client address, whether
    or not the token is right (so it also bounds guessing)."""
    RATE_LIMIT_IDEMPOTENCY_KEYS_PER_CLIENT: str = "600 per hour;60 per minute"
    """Idempotency-Keys the service issues (``POST /api/idempotency-keys``) per client
    address."""
    RATE_LIMIT_SIGN_IN_PER_CLIENT: str = "200 per hour;20 per minute"
    """Owner sign-ins and sign-outs on the bot pages (``POST /bots/<id>/owner``,
    ``.../owner/sign-out``) per client address, right or wrong (so it also bounds guessing)."""
    RATE_LIMIT_BOT_OWNER_PER_CLIENT: str = "100 per hour;10 per minute"
    """An owner's changes of a bot (``PATCH`` including pause and resume, delete, re-check,
    rotate the signing secret by API or form) per client address."""
    RATE_LIMIT_BOT_OWNER_PER_OWNER: str = "100 per hour;10 per minute"
    """The same per owner token (whatever address they come from)."""

    RATE_LIMIT_CHALLENGES_PER_CLIENT: str = "60 per hour;10 per minute"
    """Challenge requests (``POST /api/challenges``, ``POST /challenges/new``) per client
    address, taken or refused (the per-owner and per-target limits of CHALLENGE_* come on
    top)."""
    RATE_LIMIT_CHALLENGES_PER_OWNER: str = "60 per hour;10 per minute"
    """The same per bearer token (whatever address they come from)."""

    RATE_LIMIT_ACCOUNT_SIGN_IN_PER_CLIENT: str = "30 per hour;10 per minute"
    """Account sign-in attempts (``POST /account/sign-in``, and setting a password with a
    reset link) per client address, right or wrong, whichever account they name; the
    per-account delay (``SIGN_IN_FREE_FAILURES``) comes on top."""
    RATE_LIMIT_SIGN_UP_PER_CLIENT: str = "10 per hour;3 per minute"
    """Account sign-ups (``POST /account/sign-up``) per client address."""
    RATE_LIMIT_WEBHOOK_TEST_PER_CLIENT: str = "30 per hour;5 per minute"
    """"Send test event" (``POST /api/webhooks/<id>/test`` and the form) per client address:
    each is a call to the owner's URL."""
    RATE_LIMIT_WEBHOOK_TEST_PER_OWNER: str = "30 per hour;5 per minute"
    """The same per token (account token or bot owner token)."""

    # --- accounts ------------------------------------------------------------------------
    SIGN_IN_FREE_FAILURES: int = 5
    """Wrong passwords one client may send for one account before it must wait; each further
    failure doubles the wait (1 s, 2 s, 4 s, ... up to SIGN_IN_MAX_DELAY_S).  Only that
    client waits: the account's owner signs in from anywhere else at once, so the delay can
    never lock anyone out of their own account.  A success clears that client's count."""
    SIGN_IN_MAX_DELAY_S: float = 900.0
    """The longest wait one client is given between sign-in attempts to one account."""
    PASSWORD_MIN: int = 10
    """Shortest password accepted at sign-up and reset (characters)."""
    PASSWORD_MAX: int = 256
    """Longest password accepted (bounds the hashing work a request may ask for)."""
    ARGON2_TIME_COST: int = 3
    """argon2id passes over memory (argon2-cffi's default, RFC 9106's second recommendation)."""
    ARGON2_MEMORY_KIB: int = 65536
    """argon2id memory per hash in KiB (64 MiB: argon2-cffi's default).  Stored hashes keep
    their own parameters; a sign-in rehashes one made with other settings."""
    ARGON2_PARALLELISM: int = 4
    """argon2id lanes."""
    ACCOUNT_RESET_TTL_S: float = 86400.0
    """How long a reset link printed by ``arena account reset-password`` stays valid."""
    ACCOUNT_TOKENS_MAX: int = 20
    """Live API tokens one account may hold at once."""

    # --- idempotency ---------------------------------------------------------------------
    IDEMPOTENCY_TTL_S: float = 24 * 3600.0
    """How long the response to a request with an ``Idempotency-Key`` is kept for retries."""
    IDEMPOTENCY_IN_PROGRESS_S: float = 120.0
    """How long a request holds its ``Idempotency-Key`` while it runs (a retry meanwhile
    gets 409); after that the request is presumed dead and a retry may take the key over.
    Keep it above the web server's request timeout."""

    # --- bots ----------------------------------------------------------------------------
    BOT_NAME_MAX: int = 40
    """Longest bot name."""
    BOT_URL_MAX: int = 2000
    """Longest bot URL."""
    BOT_CALLS_KEPT: int = 50
    """``/move`` calls kept per bot for its owner's view (``/bots/<id>/calls``): the newest
    ones, with the raw answer; the requests are rebuilt from the match logs."""
    BOT_CALLS_TTL_S: float = 7 * 24 * 3600.0
    """How long a bot's kept calls live in Redis after its last finished match."""
    BOT_CALLS_ANSWER_MAX: int = 2000
    """Bytes of each raw answer kept for the owner's view (the rest is cut off); of a non-2xx
    answer (a 500's traceback) the referee reads only that much of the body."""
    HEALTH_DEADLINE_MS: int = 2000
    """Deadline of the probe ``POST /move`` of a health check."""
    HEALTH_DESCRIBE_DEADLINE_MS: int = 3000
    """Deadline of the ``GET /`` of a health check."""
    HEALTH_SWEEP_INTERVAL_S: float = 300.0
    """How often every bot is checked again (by the clock, through the queue)."""
    HEALTH_FAILURES_TO_PAUSE: int = 3
    """Consecutive failed checks after which a bot leaves the ladder (one success returns
    it)."""
    HEALTH_CHECK_REQUEUE_AFTER_S: float = 120.0
    """A submission or URL-change check still queued or running after this long, whose job
    Redis no longer knows (lost, or its worker died), is enqueued again by the health sweep."""
    HEALTH_PAUSE_FORFEITS_IN_A_ROW: int = 2
    """A bot that forfeits this many finished matches in a row (its newest ones) is paused
    (``unhealthy``) until a health check passes."""
    HEALTH_PAUSE_FAULT_WINDOW: int = 8
    """How many of a bot's newest finished matches the fault rate is measured over."""
    HEALTH_PAUSE_FAULT_RATE: float = 0.2
    """Faulted moves (strikes) per ``/move`` call, over the window, at or above which a bot
    is paused until a health check passes."""
    HEALTH_PAUSE_FAULT_MIN_MOVES: int = 40
    """The fault rate is judged only once the window holds at least this many ``/move``
    calls (a few unlucky timeouts in one short match pause nobody)."""
    HEALTH_BENCH_S: float = 900.0
    """How long a bot benched for its matches (forfeits, fault rate) stays out of the ladder
    before a passing check may return it; doubled for each earlier such bench within
    ``HEALTH_BENCH_WINDOW_S`` (a bot that passes the probe but fails its matches costs its
    opponents a match each time it returns)."""
    HEALTH_BENCH_WINDOW_S: float = 7 * 24 * 3600.0
    """Match benches this recent count towards doubling the next one."""
    HEALTH_BENCH_MAX_S: float = 24 * 3600.0
    """The longest bench (the doubling stops here)."""
    HEALTH_RECHECK_MIN_INTERVAL_S: float = 60.0
    """The owner may ask for a check ("check now", ``POST /api/bots/<id>/check``) at most
    this often per bot, and not while one of theirs is still queued or running."""

    # --- notifications (webhooks) --------------------------------------------------------
    WEBHOOK_MAX_ATTEMPTS: int = 6
    """Attempts at sending one event to one webhook (the first and five retries) before its
    delivery is ``failed``.  Each attempt is held to ``MATCH_CALL_DEADLINE_MS``, the deadline
    of a bot's ``/start``, through the same SSRF guard (``ALLOW_PRIVATE_BOT_URLS``)."""
    WEBHOOK_RETRY_FIRST_S: float = 30.0
    """Wait before the first retry; each retry after it waits twice the one before."""
    WEBHOOK_RETRY_MAX_S: float = 3600.0
    """The longest wait between two attempts (the doubling stops here)."""
    WEBHOOK_SWEEP_S: float = 5.0
    """How often the clock enqueues the deliveries whose retry is due (and those whose job
    Redis lost): how late a retry may be."""
    WEBHOOKS_PER_OWNER: int = 5
    """Live webhooks one account, or one bot's owner token, may have."""

    # --- matches -------------------------------------------------------------------------
    MATCH_RULESET: str = "standard"
    """Rule set of matches created without one (and of ladder matches, see LADDER_RULESETS)."""
    MATCH_DEALS: int = 4
    """Deals per match when not given."""
    MATCH_MAX_DEALS: int = 100
    """Most deals an operator may ask for in one match."""
    MATCH_DEADLINE_MS: int = 1000
    """Per-move deadline of a seat (see referee.runner.match.Limits)."""
    MATCH_TIME_BANK_MS: int = 10_000
    """Per-seat time bank of a match."""
    MATCH_MAX_STRIKES: int = 10
    """Strikes after which a seat forfeits the match."""
    MATCH_CALL_DEADLINE_MS: int = 5000
    """Deadline of ``GET /``, ``/start`` and ``/end``."""
    MATCH_TURNS_PER_DEAL_BOUND: int = 260
    """Upper bound on turns in one deal, used only to derive a job timeout.  Why it holds: a
    card is played at most once (at most 52 plays), three passes in a row end a trick at a
    four-seat table (at most 3 passes after each play), and the decisions before play (gifts,
    trades) are at most two a seat: 52 + 3 x 52 + 8 = 216 turns, and 260 leaves room for a
    house rule the sum misses.  (200 was below it: hong-kong with default moves reaches 199.)"""
    MATCH_JOB_TIMEOUT_MARGIN_S: int = 120
    """Added to the derived worst-case match duration to get the RQ job timeout."""
    MATCH_JOB_RETRIES: int = 2
    """RQ retries of a match job that raised (the referee never raises for a bot's faults,
    so this covers infrastructure errors)."""
    MATCH_MAX_ATTEMPTS: int = 5
    """Attempts (claims) after which a match is marked failed instead of tried again."""
    MATCH_STORE_RETRY_S: float = 120.0
    """How long a finished match keeps trying to store its result while the database does
    not answer (an outage, a failover), with a back-off doubling from half a second up to
    MATCH_STORE_RETRY_MAX_WAIT_S, before its job gives up (it is kept in Redis meanwhile
    and the next attempt stores it: :mod:`arena.jobs.result_spool`).  0: no retry."""
    MATCH_STORE_RETRY_MAX_WAIT_S: float = 5.0
    """Longest wait between two attempts to store a finished match's result."""
    MATCH_STORE_SPOOL_TTL_S: float = 24 * 3600.0
    """How long a result that could not be stored is kept in Redis for a later attempt at
    its match (which stores it instead of playing the match again)."""
    LEASE_S: float = 60.0
    """A worker running a match holds a lease for this long and renews it every third of
    it; a match whose lease ran out is considered abandoned and re-enqueued."""
    RECONCILE_QUEUED_AFTER_S: float = 60.0
    """A queued match whose RQ job is missing (Redis lost) is re-enqueued once it has been
    queued this long (a grace period for jobs being enqueued right now)."""
    RECONCILE_INTERVAL_S: float = 30.0
    """How often the clock runs the reconciler."""

    # --- ratings -------------------------------------------------------------------------
    ELO_INITIAL: float = 1500.0
    """Rating of a bot before its first game in a family."""
    ELO_K: float = 32.0
    """K factor of a two-player game; in an n-seat match each of the n-1 pairwise results
    moves a rating by at most K/(n-1), so a match moves it by at most K."""
    ELO_PROVISIONAL_GAMES: int = 10
    """A rating is marked provisional until the bot has played this many rated matches."""
    ELO_INITIAL_DEVIATION: float = 350.0
    """Standard error of a rating before any result: where the ± shown beside every rating
    starts before results narrow it (:mod:`arena.play.uncertainty`)."""

    # --- ladder --------------------------------------------------------------------------
    LADDER_ENABLED: bool = True
    """Whether the clock runs matchmaking rounds (``arena ladder`` works either way)."""
    LADDER_RULESETS: str = "standard"
    """Comma-separated presets the ladder cycles through."""
    LADDER_DEALS: int = 4
    """Deals per ladder match."""
    LADDER_MAX_MATCHES_PER_ROUND: int = 8
    """Most matches one matchmaking round creates."""
    LADDER_INTERVAL_S: float = 10.0
    """How often the clock runs a matchmaking round."""
    LADDER_WAIT_WEIGHT: float = 2.0
    """Rating points of preference gained per second a bot has waited: a bot far from the
    anchor's rating is picked anyway once it has waited long enough (no starvation)."""
    LADDER_SEED: int = 0
    """Seed of the ladder's tie-breaking (0: from the clock)."""
    LADDER_FORMAT: str = "plain"
    """``plain``: a ladder table plays one match.  ``duplicate``: it plays a *duplicate set*,
    one match per rotation of its seats on the same deals, rated once as a whole by each bot's
    score against the others who held the same cards (:mod:`arena.play.duplicate_sets`,
    docs/operations.md has the figures)."""

    # --- challenges ----------------------------------------------------------------------
    CHALLENGE_SHARE: float = 0.25
    """Share of the workers' match slots that challenges may hold at once: at most
    ``floor(CHALLENGE_SHARE x live workers x WORKER_CONCURRENCY)`` challenge matches (at
    least 1) are queued or running; later challenges wait in the database, not on the queue,
    so ladder and tournament matches never queue behind them (docs/operations.md,
    "Challenges and the ladder")."""
    CHALLENGE_SLOTS: int = 0
    """A fixed number of challenge slots instead of the share above (0: use the share)."""
    CHALLENGE_OPEN_PER_OWNER: int = 3
    """Challenges an owner (an account, or a bot without one) may have waiting, queued or
    running at once."""
    CHALLENGE_PER_OWNER_PER_HOUR: int = 20
    """Challenges an owner may make in any hour."""
    CHALLENGE_PER_TARGET_PER_HOUR: int = 6
    """Times one bot may be challenged (picked as an opponent) in any hour, by anyone."""
    CHALLENGE_DEALS: int = 4
    """Deals of a challenge that does not say."""
    CHALLENGE_MAX_DEALS: int = 20
    """Most deals a challenge may ask for."""
    CHALLENGE_NEAR_POOL: int = 8
    """A challenge "near its rating" draws its opponents at random from this many eligible
    bots closest to the challenger's rating in the rule set's family."""
    CHALLENGE_DISPATCH_INTERVAL_S: float = 5.0
    """How often the clock starts waiting challenges whose slot came free (workers also do
    right after each match, so this only matters after a crash or an outage)."""

    # --- tournaments ---------------------------------------------------------------------
    TOURNAMENT_MAX_ENTRANTS: int = 256
    """Most bots one tournament may have."""
    TOURNAMENT_ADVANCE_INTERVAL_S: float = 5.0
    """How often the clock runs the (idempotent) advance step of every running tournament;
    workers also run it right after each tournament match, so this only matters after a
    crash between a match's end and its tournament's next step."""

    # --- web and API ---------------------------------------------------------------------
    API_PAGE_LIMIT: int = 50
    """Default page size of list endpoints."""
    API_MAX_PAGE_LIMIT: int = 200
    """Largest page size a client may ask for."""
    LEADERBOARD_PAGE_SIZE: int = 50
    """Rows per page of the leaderboard page (it is paginated and searchable by name
    prefix, so its size and cost do not grow with the number of bots)."""
    RECENT_MATCHES: int = 20
    """Matches listed on a bot's page (newest first; older ones through the API)."""
    BOT_PAGE_STRIKES: int = 20
    """Strikes a bot's page lists one by one (the newest); its counts and reason chips cover
    every strike of the matches it lists."""
    PAGE_SIZE: int = 50
    """Rows per page of the match list (``/matches``) and the bot list (``/bots``): keyset
    pages, each one index range whatever the number of rows."""
    CHART_POINTS: int = 200
    """Most points a rating chart draws per bot: the history is sampled server-side at this
    many evenly spaced games, so a chart costs the same for 10 or 100,000 games."""
    SITE_COUNTS_TTL_S: float = 10.0
    """How long the home page reuses its counts of bots and tournaments (one small cached
    aggregate per process; the count of finished matches is a maintained counter)."""
    READYZ_CACHE_S: float = 0.5
    """How long a web process answers ``/readyz`` with its last probe of the database and
    Redis instead of probing again (one probe at a time, the others wait for it): a flood of
    probes is at most one round trip to each per process per this time, and a database or
    Redis going down is reported within it (plus the probe's own time).  0: probe on every
    request."""
    READ_CACHE_S: float = 2.0
    """Longest time a web process answers a public GET from its memory instead of rendering
    it again (:mod:`arena.web.readcache`): no answer is older than this.  A request that
    changes what pages show empties it at once (:mod:`arena.core.changes`; a write that changes
    nothing empties nothing).  0: off."""
    READ_CACHE_MAX_BYTES: int = 64 * 2**20
    """Memory each web process may use for those answers (the newest are kept)."""
    READ_CACHE_SHARED: bool = True
    """Whether web processes also keep their renders in Redis for each other
    (:mod:`arena.web.sharedcache`): one render per URL per ``READ_CACHE_S`` for the whole
    deployment instead of one per process, within the same bound; a write through any
    process makes every earlier render stale at once."""
    TOURNAMENT_PAGE_TABLES: int = 16
    """Tables of one round drawn on a tournament page or its live fragment; larger rounds
    are paginated (``?round=N&tables=PAGE``) so a 256-entrant page stays small."""
    TOURNAMENT_PAGE_STANDINGS: int = 64
    """Standings rows shown on a tournament page (the full table is in the API and the
    archive)."""
    PUBLIC_URL: str = ""
    """Base URL the service is reached at (for links printed by the CLI); empty: derived."""

    # --- worker and clock ----------------------------------------------------------------
    WORKER_CLOCK: bool = True
    """Whether ``arena worker`` also runs the clock (ladder, health sweep, reconciler) in a
    child process.  Several clocks are safe: a Redis lock elects one at a time."""
    CLOCK_TICK_S: float = 1.0
    """How often the clock wakes up to see what is due."""
    WORKER_CONCURRENCY: int = 100
    """Jobs one ``arena worker`` process runs at once, each in a thread of its pool (matches
    wait on bots, not on the CPU).  0: the classic RQ worker, one job at a time in a forked
    work horse."""
    WORKER_SHUTDOWN_GRACE_S: float = 60.0
    """On SIGTERM a pool worker takes no more jobs and lets its running matches finish for
    this long."""
    WORKER_HANDBACK_S: float = 15.0
    """After the shutdown grace, matches still running are asked to give themselves back to
    the queue at their next turn; this is how long the worker waits for that before it exits
    and leaves the rest to their leases and the reconciler."""
    WORKER_TIMEOUT_GRACE_S: float = 60.0
    """A job in a pool worker stops itself at its RQ timeout at the next turn; one still
    running this long after its timeout (stuck where it cannot stop itself) is given up:
    recorded as failed (and retried), its lease left to run out, its thread abandoned."""
    WORKER_SWITCH_INTERVAL_MS: float = 1.0
    """How long one thread of a pool worker may hold the interpreter (the GIL) while others
    wait for it (``sys.setswitchinterval``; Python's default is 5 ms).  A match whose bot
    answered, or whose deadline fired, waits up to this long behind a busy thread, and
    behind each other thread that takes its turn first: with 140 matches in one process the
    default 5 ms made deadline overshoot p99 20-44 ms (``bench/concurrency.py``), 1 ms
    (with ``WORKER_GC_THRESHOLDS``) 13-22 ms, at no cost in throughput (and 6-10 ms with
    the live outbox and ``WORKER_BOOKKEEPING_SLOTS``)."""
    WORKER_BOOKKEEPING_SLOTS: int = 2
    """How many threads of a pool worker may do a match's heavy bookkeeping at once
    (claiming, storing a result, building a deal's live replay; :mod:`arena.core.bookkeeping`).
    Matches start and finish in waves, and a wave of a hundred such threads queued every
    deadline that fired behind it.  0: no limit."""
    WORKER_BOOKKEEPING_WAIT_S: float = 5.0
    """How long a pool worker's thread waits for a bookkeeping slot before it goes ahead
    without one: a holder stuck where nothing can stop it (a claim waiting on someone's row
    lock, a database that stopped answering) delays the others by this much, never stops
    them."""
    WORKER_GC_THRESHOLDS: str = "10000,20,100"
    """The pool worker's garbage-collector thresholds (``gc.set_threshold``; Python's are
    700,10,10).  Every collection holds the interpreter, so no deadline can fire during it:
    a match's turn allocates hundreds of containers, and with Python's thresholds a hundred
    matches set off a young collection (4-20 ms) many times a second and a full one
    (36-77 ms) every few seconds.  Fewer, larger young collections and rare full ones cost
    less in all (cycles are rare: reference counting frees nearly everything first).
    Empty: Python's own."""
    WORKER_REDIS_RETRY_MAX_S: float = 30.0
    """Longest wait between two attempts of a worker to reach a lost Redis (the wait doubles
    from half a second up to this); the worker resumes as soon as Redis answers."""
    WORKER_CHILD_RESTART_MAX_S: float = 30.0
    """Longest back-off before a worker starts its dead clock or RQ scheduler again (the
    wait doubles from half a second, and starts over once the child has lived a minute)."""
    WORKER_RQ_SCHEDULER: bool = True
    """Whether ``arena worker`` runs RQ's scheduler (it moves delayed job retries onto the
    queue).  Recovery does not depend on it: the reconciler works from the database."""

    # --- metrics and logs (arena.core.metrics, arena.core.logs) ----------------------------
    METRICS_TOKEN: str = ""
    """Bearer token that Prometheus sends to read ``/metrics`` of the web app (the
    ``ADMIN_TOKEN`` is accepted too).  A token of its own, read-only: Prometheus's
    configuration then holds nothing that can act on the service.  Empty, and no
    ``ADMIN_TOKEN``: ``/metrics`` answers 404.  Keep ``/metrics`` off the public site as well
    (the shipped nginx refuses it)."""
    METRICS_HOST: str = "127.0.0.1"
    """Address the metrics ports of ``arena worker``, ``arena clock`` and ``arena live`` listen
    on (they have no token: keep them on loopback or a private network)."""
    WORKER_METRICS_PORT: int = 0
    """Port on which ``arena worker`` serves its Prometheus metrics (``/metrics``); 0: none.
    Each worker process on a machine needs a port of its own."""
    CLOCK_METRICS_PORT: int = 0
    """Port on which ``arena clock`` serves its Prometheus metrics; 0: none.  (A worker's
    clock child gets the same environment: give one of them the port.)"""
    LIVE_METRICS_PORT: int = 0
    """Port on which ``arena live`` serves its Prometheus metrics; 0: none."""
    PROMETHEUS_MULTIPROC_DIR: str = ""
    """Folder where the processes of one gunicorn server keep their metrics so that
    ``/metrics`` adds them up (``prometheus_client``'s multiprocess mode).  Read from the
    environment when a process starts, before anything else: ``deploy/gunicorn.conf.py``
    sets it (a new temporary folder unless given) and empties it at start; the other
    processes need nothing (``arena worker`` with ``WORKER_CONCURRENCY=0`` makes its own).
    Do not set it for processes that are not of one gunicorn server."""
    LOG_FORMAT: str = "text"
    """``text``: one ``time logger message`` line per event, for a terminal (the demo).
    ``json``: one JSON object per line, with the request id, match id and job id of the
    line's request or job (production: docs/operations.md, "Logs")."""

    # --- live matches (arena.live) ---------------------------------------------------------
    LIVE_ENABLED: bool = True
    """Workers publish every running match's public events (and tournaments' changes) to
    Redis for the live relay (``arena live``).  Off: match pages show results only."""
    LIVE_URL: str = "/live"
    """Where browsers reach the live relay: a path on this site (the shipped nginx sends
    ``/live/`` to the relay) or a full URL (the demo's relay on its own port)."""
    LIVE_HOST: str = "127.0.0.1"
    """Address ``arena live`` listens on."""
    LIVE_PORT: int = 8100
    """Port ``arena live`` listens on (0: any free one, printed on start)."""
    LIVE_WEB_URL: str = "http://127.0.0.1:8000"
    """Where the relay reads a tournament's live fragment (gunicorn, without nginx): once
    per change for all its viewers, instead of every viewer asking."""
    LIVE_STREAM_MAX_EVENTS: int = 20000
    """Events kept per match in Redis (a reconnecting viewer resumes from them); a match of
    the longest allowed length stays far below."""
    LIVE_STREAM_TTL_S: int = 3600
    """A match's events are dropped from Redis this long after its last one."""
    LIVE_FLUSH_MS: float = 100.0
    """A worker process sends its matches' live events to Redis in batches, this often
    (:mod:`arena.live.outbox`): a viewer sees a turn at most this much later.  A batch costs
    the sender ~80 us of CPU whatever its size, and ~3 us an event: at 20 ms a hundred
    matches made batches of ~6 events, and the sender was a twentieth of the worker's CPU."""
    LIVE_EVENT_MAX_BYTES: int = 64 * 1024
    """Largest event published; a deal's revealed hands above it are left to the replay."""
    LIVE_MAX_VIEWERS: int = 20000
    """Open streams one relay process serves at most (then 503)."""
    LIVE_MAX_VIEWERS_PER_CHANNEL: int = 5000
    """Open streams of one match or tournament at most (then 503)."""
    LIVE_MAX_VIEWERS_PER_IP: int = 16
    """Open streams of one client at most (then 429): an IPv4 address, or an IPv6 /64
    (:func:`arena.core.clients.client_key`, the rule of the rate limits too)."""
    LIVE_MAX_CHANNELS: int = 2000
    """Matches and tournaments watched at once at most (then 503)."""
    LIVE_STREAM_MAX_S: float = 1800.0
    """A stream is closed after this long; the browser reconnects and resumes where it was
    (so no connection is held forever)."""
    LIVE_HEARTBEAT_S: float = 15.0
    """A comment line is sent on a quiet stream this often (keeps proxies from closing it
    and finds dead viewers)."""
    LIVE_VIEWER_QUEUE: int = 1024
    """Events waiting for one viewer at most; a viewer that falls further behind is cut off
    (it reconnects and resumes), so a stalled reader never grows the relay's memory."""
    LIVE_HEADER_TIMEOUT_S: float = 10.0
    """A viewer's request must arrive whole within this time."""
    LIVE_TOURNAMENT_RECHECK_S: float = 5.0
    """The relay also re-reads a watched tournament's fragment this often (changes nobody
    announced, e.g. the clock's)."""
    LIVE_FRAGMENT_MAX_BYTES: int = 512 * 1024
    """Largest tournament fragment pushed to viewers; above it viewers are told to fetch."""

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def default_settings() -> dict[str, Any]:
    """The defaults as a plain dict (upper-case names only)."""
    return {k: getattr(Defaults, k) for k in dir(Defaults) if k.isupper()}


def convert(name: str, raw: str, default: Any) -> Any:
    """Convert an environment string to the type of ``default``."""
    if isinstance(default, bool):
        value = raw.strip().lower()
        if value in TRUE:
            return True
        if value in FALSE:
            return False
        raise ValueError(f"{name}: expected a boolean, got {raw!r}")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise ValueError(f"{name}: expected an integer, got {raw!r}") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise ValueError(f"{name}: expected a number, got {raw!r}") from None
    return raw


LADDER_FORMATS = ("plain", "duplicate")
"""Values of ``LADDER_FORMAT`` (:mod:`arena.play.duplicate_sets`)."""

CHOICES: dict[str, tuple[str, ...]] = {
    "LADDER_FORMAT": LADDER_FORMATS,
}
"""Settings that take one of a few words (compared as the code reads them: stripped,
lower-case).  ``COOKIE_SECURE``, ``COOKIE_SAMESITE`` (:mod:`arena.core.security`) and
``LOG_FORMAT`` (:mod:`arena.core.logs`) are refused at start by their own readers."""

RULESET_SETTINGS = ("MATCH_RULESET", "LADDER_RULESETS")
"""Settings that name rule sets (``LADDER_RULESETS``: comma-separated), as
:func:`referee.find_ruleset` reads them."""


class SettingError(ValueError):
    """A setting whose value the code cannot use: the process refuses to start (every
    process builds the app), instead of failing later where the setting is first read (a
    ladder round, hours on, raised in the clock's log and played no round)."""


def check_choices(config: Mapping[str, Any]) -> None:
    """Raise :class:`SettingError` for the first enum-like setting (:data:`CHOICES`) or rule
    set name (:data:`RULESET_SETTINGS`) that the code would refuse when it reads it."""
    from referee import find_ruleset

    for name, allowed in CHOICES.items():
        value = str(config.get(name, "")).strip().lower()
        if value not in allowed:
            raise SettingError(f"{name}: expected one of {', '.join(allowed)}, got "
                               f"{config.get(name)!r}")
    for name in RULESET_SETTINGS:
        for ruleset in (n.strip() for n in str(config.get(name, "")).split(",")):
            if not ruleset and name == "LADDER_RULESETS":
                continue  # an empty list means the default (arena.play.ladder)
            try:
                find_ruleset(ruleset)
            except (KeyError, ValueError) as exc:
                raise SettingError(f"{name}: {ruleset!r} is not a rule set ({exc})") from None


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Settings given in the environment, converted to their types."""
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name, default in default_settings().items():
        if name in env:
            out[name] = convert(name, env[name], default)
    return out


def setting_docs() -> dict[str, str]:
    """Each setting's docstring (for ``docs/operations.md`` and ``arena config``)."""
    import ast
    import inspect

    source = inspect.getsource(Defaults)
    tree = ast.parse(source)
    docs: dict[str, str] = {}
    body = tree.body[0].body  # type: ignore[attr-defined]
    for node, nxt in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(nxt, ast.Expr)
            and isinstance(nxt.value, ast.Constant)
            and isinstance(nxt.value.value, str)
        ):
            docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs
