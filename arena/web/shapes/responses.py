"""What the API answers, defined once for the OpenAPI document.

The views build these answers as plain dicts (the read path builds match pages from column
queries, without objects in between); ``tests/arena/test_openapi.py`` validates real answers
of the endpoints against the schemas made from these classes, so the two cannot drift apart.
A field without a default is always present; a field typed ``| None`` may be ``null``.
Objects are open (a new field is not a breaking change), so clients ignore what they do not
know.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")

CheckState = Literal["queued", "running", "passed", "failed"]
Purpose = Literal["submit", "url_change", "recheck"]


class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorDetail(Answer):
    code: str = Field(description="stable, for programs: unknown_field, rate_limited, ...")
    message: str = Field(description="for people")
    retry_after: int | None = Field(None, description="429: seconds to wait")


class Error(Answer):
    """Every error the service answers, whatever the status."""

    error: ErrorDetail


class Page(Answer, Generic[T]):
    """An offset page of a short list."""

    items: list[T]
    page: int = Field(ge=1)
    limit: int = Field(ge=1)
    total: int = Field(ge=0)
    next_page: int | None


class CursorPage(Answer, Generic[T]):
    """A keyset page: pass ``next_cursor`` back as ``?cursor=``; null on the last page."""

    items: list[T]
    limit: int = Field(ge=1)
    next_cursor: str | None


class Rating(Answer):
    family: str
    rating: float
    games: int
    provisional: bool
    margin: float = Field(ge=0, description=(
        "half the rating's 95% interval: the bot's true rating lies within rating ± margin "
        "with about 95% probability under the Elo model (docs/operations.md, "
        "Rating uncertainty); narrows as the bot plays, never below Elo's own noise"))
    interval: list[float] = Field(min_length=2, max_length=2, description=(
        "[rating - margin, rating + margin], rounded to 0.1"))


class Check(Answer):
    """A submission / URL-change / re-check health check."""

    id: int
    purpose: Purpose
    state: CheckState
    done: bool
    reason: str
    describe_ms: float | None
    move_ms: float | None
    queued_at: str | None
    finished_at: str | None
    url: str | None = Field(None, description="where to poll it (in a bot's answer)")


class BotCall(Answer):
    """One ``/move`` call of a bot, for its owner (:mod:`arena.bots.calls`)."""

    match_id: int
    deal: int = Field(ge=0, description="0-based index, as in the match log (pages: deal + 1)")
    turn: int = Field(ge=0, description="0-based index, as in the match log (pages: turn + 1)")
    seat: int = Field(ge=0, description="0-based index, as in the match log (pages: seat + 1)")
    at: str = Field(description="when the turn ended (ISO 8601, UTC)")
    latency_ms: float | None
    verdict: str = Field(description="\"ok\", or the fault's name in plain words (\"not "
                         "JSON\", \"HTTP error status\", ...: docs/protocol.md, the same on "
                         "every page)")
    fault: str | None = Field(description="the fault's code (docs/protocol.md), or null")
    detail: str = Field(description="what went wrong, in a sentence (empty when ok)")
    move: str = Field(description="the move played (the default move after a fault)")
    say: str | None
    answer: str = Field(description="the raw answer body as the bot sent it (UTF-8, its "
                        "first BOT_CALLS_ANSWER_MAX bytes, also of a non-2xx answer such "
                        "as a 500's traceback; a refused answer scrubbed of the bot's URL "
                        "and addresses; empty when no answer body arrived in time)")
    answer_bytes: int = Field(ge=0)
    answer_truncated: bool
    request: dict[str, Any] | None = Field(description="the exact /move body the bot was "
                                           "sent, rebuilt from the match log (null when the "
                                           "log is gone)")


class BotCalls(Answer):
    """``GET /api/bots/<id>/calls``."""

    bot_id: int
    kept: int = Field(description="BOT_CALLS_KEPT: how many calls are kept per bot")
    items: list[BotCall]


class CheckStatus(Check):
    """``GET /api/bots/<id>/check``: the check and the bot's status."""

    bot_status: str
    pause_reason: str


class BotHealth(Answer):
    failures: int
    last_checked_at: str | None
    last_reason: str | None
    pause_reason: str


class Bot(Answer):
    id: int
    name: str
    version: int
    status: Literal["pending", "rejected", "active", "paused", "unhealthy", "deleted"]
    created_at: str | None
    updated_at: str | None
    info: dict[str, Any] | None
    health: BotHealth
    check: Check | None = Field(description="the newest admission check, with the URL to poll")
    ratings: list[Rating]
    accepts_challenges: bool = Field(description=(
        "whether other owners may challenge it (its owner opts out with PATCH)"))
    url: str | None = Field(None, description="owner or operator only")
    pending_url: str | None = Field(None, description="a new URL being checked (owner only)")


SECRETS_WITHHELD = ("the secrets this replay of an Idempotency-Key without a bearer token or "
                    "an issued key leaves out (null above): docs/api.md")


class SigningSecret(Answer):
    bot_id: int
    signing_secret: str | None = Field(description="the new secret, shown only in this answer")
    signing_generation: int
    previous_secret_valid_until: str | None = Field(description=(
        "until when (UTC) the arena also signs with the previous secret (one more v2 "
        "signature), so the bot keeps answering while it is restarted with the new one; null "
        "when the rotation asked for no grace"))
    signing_note: str


class BotChecking(Answer):
    """202: the change is stored and its health check queued; poll ``check_url``."""

    bot: Bot
    check_url: str


class BotCreated(BotChecking):
    token: str | None = Field(description="the owner token, shown only in this answer (null in "
                              "a replay that withholds it, see secrets_withheld)")
    token_note: str
    signing_secret: str | None = Field(description="the bot's request-signing secret, shown "
                                       "once (null in a replay that withholds it)")
    signing_generation: int
    signing_note: str
    secrets_withheld: list[str] | None = Field(None, description=SECRETS_WITHHELD)


class IssuedKey(Answer):
    key: str = Field(description="an Idempotency-Key for one creating request and its retries")
    note: str


class BotVersion(Answer):
    version: int
    created_at: str | None
    info: dict[str, Any] | None
    url: str | None = Field(None, description="owner or operator only")


class HealthCheck(Answer):
    """A check, or (purpose ``bench``) the bot's benching: ``at`` it left the ladder,
    ``reason`` why, ``until`` when the bench ends (docs/operations.md, back-off)."""

    at: str | None
    ok: bool | None
    state: CheckState
    purpose: Literal["submit", "url_change", "recheck", "sweep", "bench"]
    reason: str
    describe_ms: float | None
    move_ms: float | None
    until: str | None = Field(None, description="a bench's end (purpose bench only)")


class RatingEvent(Answer):
    match_id: int
    family: str
    before: float
    after: float
    delta: float
    games: int
    provisional: bool
    at: str | None


class BotRef(Answer):
    id: int
    name: str


class RankedBot(BotRef):
    status: str


class LeaderboardEntry(Rating):
    rank: int = Field(ge=1)
    bot: RankedBot


class Leaderboard(Page[LeaderboardEntry]):
    family: str


class Family(Answer):
    family: str
    presets: list[str]
    results: int


class Families(Answer):
    items: list[Family]
    shared: dict[str, str] = Field(description="preset -> the family it shares")


class Latency(Answer):
    calls: int | None
    p50_ms: float | None
    p95_ms: float | None
    max_ms: float | None


class Seat(Answer):
    seat: int
    bot: BotRef
    bot_version: int
    rank: int | None
    score: int | None
    wins: int | None
    strikes: int | None
    forfeited: bool | None
    latency: Latency


class RatingChange(Answer):
    bot_id: int
    before: float
    after: float
    delta: float


class Match(Answer):
    id: int
    kind: Literal["ladder", "admin", "tournament", "challenge"]
    state: Literal["queued", "running", "finished", "failed"]
    ruleset: str
    family: str
    deals: int
    rated: bool
    created_at: str | None
    started_at: str | None
    finished_at: str | None
    seats: list[Seat]
    standings: list[Seat] | None = Field(None, description="finished matches")
    log_url: str | None = Field(None, description="finished matches")
    seed: int | None = Field(None, description="one match only, once it is over: the seed "
                                               "its hands were dealt from (its log's; a retried "
                                               "attempt deals from its own, docs/logs.md)")
    match_seed: int | None = Field(None, description="one match only, once it is over: the "
                                                     "seed it was created with")
    limits: dict[str, Any] | None = Field(None, description="one match only")
    attempts: int | None = Field(None, description="one match only")
    error: str | None = Field(None, description="one match only")
    strikes: list[dict[str, Any]] | None = None
    forfeits: list[dict[str, Any]] | None = None
    notes: list[Any] | None = None
    rating_changes: list[RatingChange] | None = None


class LadderRoundDone(Answer):
    matches: list[int] = Field(description="ids of the matches created")


class Progress(Answer):
    queued: int
    running: int
    finished: int
    failed: int


class Entrant(Answer):
    bot: dict[str, Any]
    seed: int | None
    rating: float | None


class Tournament(Answer):
    id: int
    name: str
    format: str
    state: Literal["created", "running", "finished", "cancelled"]
    ruleset: str
    family: str
    seats: int
    deals: int
    duplicate: bool
    advance: int | None
    rounds: int | None
    cycles: int | None
    rated: bool
    seed: int | None = Field(description="null until the tournament is over (its tables' "
                                         "deals derive from it)")
    limits: dict[str, Any]
    current_round: int
    progress: Progress
    entrants: list[Entrant] | None = None
    report: dict[str, Any] | None = Field(None, description="what an operator step did")


class StandingRow(Answer):
    rank: int
    bot: dict[str, Any]
    round_reached: int | None = Field(
        default=None, description="knockout only: the last round the bot was drawn in (at a "
        "table or with a bye); later rounds come first in the order")
    place_in_round: int | None = Field(
        default=None, description="knockout only: the bot's place at its table in "
        "round_reached; null while that table plays or after a bye (such rows come first "
        "within their round)")


class Standings(Answer):
    tournament: int
    final: bool
    order: list[str] = Field(description="the sort keys, tie-breaks in order")
    items: list[StandingRow]


class BracketRound(Answer):
    number: int
    state: Literal["pending", "playing", "done"]
    tables: list[dict[str, Any]]


class Bracket(Answer):
    tournament: int
    current_round: int
    rounds: list[BracketRound]


class Probe(Answer):
    status: str


class Readiness(Probe):
    ready: bool
    checks: dict[str, Literal["ok", "down"]]


class Replay(Answer):
    match_url: str


class LiveSeat(Answer):
    seat: int
    bot: BotRef
    rating: float | None = Field(description="the bot's rating in the match's family; null: "
                                              "none yet")


class TournamentRef(Answer):
    id: int
    name: str
    url: str


class LiveMatch(Answer):
    id: int
    kind: Literal["ladder", "admin", "tournament", "challenge"]
    ruleset: str
    family: str
    deals: int
    rated: bool
    started_at: str | None
    rating: float = Field(description="the seats' mean rating (a seat without one counts as "
                                      "the initial rating)")
    viewers: int | None = Field(description="spectators of its live stream now; null: unknown")
    url: str
    tournament: TournamentRef | None
    seats: list[LiveSeat]


class LiveTournament(Answer):
    id: int
    name: str
    format: str
    ruleset: str
    current_round: int
    rounds: int | None
    viewers: int | None = Field(description="spectators of its live page now; null: unknown")
    url: str


class LiveNow(Answer):
    featured: int | None = Field(description="the running match with the highest mean "
                                             "rating (first in matches)")
    viewers_known: bool = Field(description="false when no live relay reports its counts")
    matches: list[LiveMatch] = Field(description="running matches, the newest (at most 24), "
                                                 "the featured one first")
    tournaments: list[LiveTournament] = Field(description="running tournaments, the newest "
                                                          "(at most 10)")


class AccountRef(Answer):
    id: int
    username: str


class AccountBots(Answer):
    """``GET /api/account/bots``: the account a token acts for, and its live bots."""

    account: AccountRef
    scopes: list[str] = Field(description="what the token used may do")
    items: list[Bot]


# --- webhooks --------------------------------------------------------------------------------


class WebhookDelivery(Answer):
    """One event sent (or being sent) to a webhook: the delivery log's line."""

    id: int
    event: str = Field(description="bot.benched, bot.back, tournament.starting, "
                                   "tournament.finished, match.forfeited or webhook.test")
    event_id: str = Field(description="the payload's id: the same on every attempt")
    state: Literal["pending", "sending", "retrying", "delivered", "failed", "cancelled"]
    attempts: int = Field(ge=0)
    max_attempts: int = Field(description="WEBHOOK_MAX_ATTEMPTS")
    created_at: str | None
    last_attempt_at: str | None
    next_attempt_at: str | None = Field(description="when the next attempt is due (pending or "
                                                    "retrying)")
    delivered_at: str | None
    response_status: int | None = Field(description="the HTTP status of the last answer")
    latency_ms: int | None = Field(description="how long the last attempt took")
    error: str = Field(description="why the last attempt failed (empty when delivered)")
    payload: dict[str, Any] = Field(description="the exact JSON body sent")


class Webhook(Answer):
    id: int
    url: str
    events: list[str]
    account_id: int | None = Field(description="the account's webhook (every bot it owns)")
    bot_id: int | None = Field(description="a bot owner token's webhook (that bot only)")
    created_at: str | None
    deliveries: dict[str, int] = Field(description="how many deliveries are in each state")


class WebhookCreated(Webhook):
    """``POST /api/webhooks``: the webhook and its signing secret, shown only now."""

    secret: str = Field(description="signs every event (X-BigTwo-Signatures, version 2 of the "
                                    "bots' scheme); shown once, never again")


class Webhooks(Answer):
    items: list[Webhook]


class WebhookDeliveries(Answer):
    webhook_id: int
    items: list[WebhookDelivery]
    next_before: int | None = Field(description="pass as before= for the next, older page")


# --- challenges ------------------------------------------------------------------------------


class ChallengeBot(Answer):
    id: int
    name: str


class Challenge(Answer):
    """A challenge (``POST /api/challenges``): where it stands, then its match."""

    id: int
    state: Literal["waiting", "refused", "queued", "running", "finished", "failed"] = Field(
        description="waiting: for a challenge slot (challenges may hold only a share of the "
                    "workers, docs/operations.md); refused: an opponent could no longer play "
                    "when its turn came (reason); then its match's state")
    bot: ChallengeBot
    opponents: list[ChallengeBot]
    mode: Literal["chosen", "near"] = Field(description="opponents named, or picked at random "
                                                        "near the bot's rating")
    ruleset: str
    deals: int
    rated: bool
    reason: str
    created_at: str | None
    started_at: str | None
    queue_position: int | None = Field(description=(
        "from 1 (next): among the waiting challenges while waiting, on the job queue while "
        "its match waits for a worker; null once playing or when unknown"))
    slots: dict[str, int] = Field(description="challenge matches queued or running now "
                                              "('used') and the most allowed ('of')")
    match_id: int | None
    match_url: str | None = Field(description="the match page: the live viewer while it plays")
    url: str = Field(description="this challenge's page")
