"""What clients send: the JSON bodies and the query strings of the API, each defined once.

The views read them with ``Shape.from_body()`` / :func:`arena.web.shapes.from_query`, and
:mod:`arena.web.openapi` documents them from the same classes.  What only the database or the
rules can tell (a name taken, a rule set unknown, the seats of a rule set, a URL refused by
the SSRF guard) stays in the views; what a request says about itself is here.
"""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from arena.core.models import MAX_ID
from arena.core.tournament_models import FORMATS

from .base import Between, DefaultSetting, Length, OneOf, Shape

MAX_SEED = 2**62
"""Largest seed a client may give (a match or a tournament's deals replay from it)."""

RULESET = ("a preset or alias, optionally followed by '+key=value,...' option changes "
           "(docs/rules.md, 'Naming a rule set in one string'); its canonical name must fit "
           "1000 characters.  Default: the MATCH_RULESET setting")
Ruleset = Annotated[str, Field(description=RULESET,
                               examples=["standard", "standard+players=3"])]
BotIds = Annotated[list[int], Field(description="bot ids")]
Seed = Annotated[int, Between(0, MAX_SEED),
                 Field(description="replays the deals; random when left out")]
Deals = Annotated[int, Between(1, "MATCH_MAX_DEALS"),
                  Field(description="deals per match (default: the MATCH_DEALS setting)")]


# --- bodies ----------------------------------------------------------------------------------


class NewBot(Shape):
    """``POST /api/bots``."""

    name: Annotated[str, Length(1, "BOT_NAME_MAX", code="bad_name"),
                    Field(description="letters, digits, '_', '.' and '-', starting with a "
                                      "letter or digit; unique")]
    url: Annotated[str, Length(1, "BOT_URL_MAX", code="url_refused", status=422),
                   Field(description="the bot's HTTP endpoint (http or https; checked by the "
                                     "SSRF guard, then by a health check)")]


class BotChange(Shape):
    """``PATCH /api/bots/<id>``: a new URL (checked by a job), pausing, or both."""

    model_config = ConfigDict(json_schema_extra={"minProperties": 1})

    url: Annotated[str, Length(1, "BOT_URL_MAX", code="url_refused", status=422)] | None = \
        None
    paused: bool | None = None
    accepts_challenges: bool | None = Field(None, description=(
        "false: other owners may no longer challenge the bot (opt out); true: they may"))

    @model_validator(mode="after")
    def _something(self) -> BotChange:
        if not self.model_fields_set:
            raise PydanticCustomError("missing_field",
                                      "give url, paused and/or accepts_challenges")
        return self


class AdoptBot(Shape):
    """``POST /api/account/bots/<id>/adopt``: the bot's owner token, proving it once."""

    owner_token: Annotated[str, Length(1, 200, code="bad_token"),
                           Field(description="the owner token shown when the bot was created")]


class NewWebhook(Shape):
    """``POST /api/webhooks``: where to send the owner's events, and which."""

    url: Annotated[str, Length(1, 2000, code="url_refused", status=422),
                   Field(description="http or https; checked by the SSRF guard as a bot's URL "
                                     "is (docs/notifications.md)")]
    events: Annotated[list[str], Field(description=(
        "the events to hear (default: all): bot.benched, bot.back, tournament.starting, "
        "tournament.finished, match.forfeited; webhook.test always goes"))] | None = None
    bot_id: Annotated[int, Between(1, MAX_ID), Field(description=(
        "with a bot's owner token: the bot (its webhook hears about that bot only); with an "
        "account token: left out (the webhook hears about every bot of the account)"))] | None \
        = None


class WebhookOwnerQuery(Shape):
    """``GET /api/webhooks``: with a bot's owner token, which bot."""

    bot_id: Annotated[int, Between(1, MAX_ID),
                      Field(description="the bot whose owner token is sent")] | None = None


class DeliveriesQuery(Shape):
    """``GET /api/webhooks/<id>/deliveries``: newest first."""

    limit: Annotated[int, Between(1, 100), Field(description="page size (default 20)")] = 20
    before: Annotated[int, Between(1, MAX_ID),
                      Field(description="only deliveries older than this id (the "
                                        "next_before of the previous page)")] | None = None


class Empty(Shape):
    """A body with no fields (or no body at all): operator steps, re-checks."""


class SecretRotation(Shape):
    """``POST /api/bots/<id>/signing-secret``: no body, or whether the old secret gets a
    grace period."""

    grace: bool = Field(True, description=(
        "true (the default): the arena keeps signing with the previous secret too for "
        "SIGNING_ROTATION_GRACE_S (an hour), so the bot keeps answering while it is "
        "restarted with the new one; false: the previous secret stops at once (it leaked)"))


class MatchLimits(Shape):
    """Time limits of a match; what is left out is the service's default."""

    deadline_ms: Annotated[int, Between(10, 60_000),
                           Field(description="per move")] | None = None
    time_bank_ms: Annotated[int, Between(0, 600_000),
                            Field(description="extra time over a whole match")] | None = None
    max_strikes: Annotated[int, Between(1, 10_000),
                           Field(description="faults before a seat forfeits")] | None = None
    call_deadline_ms: Annotated[int, Between(10, 60_000),
                                Field(description="per HTTP call")] | None = None


class NewMatch(Shape):
    """``POST /api/matches`` (operator)."""

    wrong_type: ClassVar[dict[str, str]] = {"bots": "a list of bot ids"}

    bots: Annotated[list[int], Field(description="one bot id per seat, in seat order")]
    ruleset: Ruleset | None = None
    deals: Deals | None = None
    seed: Seed | None = None
    rated: bool = True
    limits: MatchLimits | None = None


class NewChallenge(Shape):
    """``POST /api/challenges``: play one of the owner's bots now."""

    wrong_type: ClassVar[dict[str, str]] = {"opponents": "a list of bot ids"}

    bot: Annotated[int, Between(1, MAX_ID),
                   Field(description="the challenger: a bot the bearer token owns")]
    opponents: Annotated[list[int], Field(description=(
        "the other seats (bot ids, one per seat after the challenger's); left out: a random "
        "set of bots near the challenger's rating"))] | None = None
    ruleset: Ruleset | None = None
    deals: Annotated[int, Between(1, "CHALLENGE_MAX_DEALS"),
                     Field(description="deals of the match (default: CHALLENGE_DEALS)")] \
        | None = None
    rated: bool = Field(False, description="true: the result moves the ratings, as a ladder "
                                           "match's does")


class LadderRound(Shape):
    """``POST /api/ladder/rounds`` (operator; the body may be left out)."""

    max_matches: Annotated[int, Between(1, 1000)] | None = None


class NewTournament(Shape):
    """``POST /api/tournaments`` (operator), and the web form's fields."""

    wrong_type: ClassVar[dict[str, str]] = {"bots": "a list of bot ids"}

    name: Annotated[str, Length(0, 80, code="bad_name")] | None = None
    format: Annotated[str, OneOf(tuple(FORMATS), code="bad_format")]
    ruleset: Annotated[Ruleset, Field(description=RULESET + "; a 2-player rule set makes a "
                                      "heads-up bracket")] | None = None
    bots: Annotated[list[int], Field(description="entrants (bot ids), at most "
                                                 "TOURNAMENT_MAX_ENTRANTS")]
    deals: Deals | None = None
    limits: MatchLimits | None = None
    duplicate: bool = Field(False, description="replay every table's deals once per rotation "
                                               "of the seats and score against the same cards")
    advance: Annotated[int, Between(1, 3),
                       Field(description="knockout: players per table who go through "
                                         "(default: half the seats, 2 of 4, 1 heads-up)")] \
        | None = None
    rounds: Annotated[int, Between(1, 100),
                      Field(description="Swiss: rounds (default ceil(log_seats n) + 1); round "
                                        "robin: a fixed number instead of 'until all met'")] \
        | None = None
    cycles: Annotated[int, Between(1, 10),
                      Field(description="round robin: times every pair meets")] = 1
    rated: bool = True
    seed: Seed | None = None
    start: bool = Field(False, description="start at once (seeding, first round)")


# --- queries ---------------------------------------------------------------------------------


Limit = Annotated[int, Between(1, "API_MAX_PAGE_LIMIT"), DefaultSetting("API_PAGE_LIMIT"),
                  Field(description="page size")]


class Paging(Shape):
    """An offset page of a short list (``?page=`` from 1)."""

    page: Annotated[int, Between(1, 1_000_000)] = 1
    limit: Limit | None = None


class CursorPaging(Shape):
    """A keyset page of a list that grows without bound (``?cursor=``, from ``next_cursor``;
    ``?page=`` is refused)."""

    cursor: Annotated[str, Field(description="the next_cursor of the previous page, "
                                 "unchanged (stable while rows are added)")] | None = None
    limit: Limit | None = None


class CallsQuery(Shape):
    """``GET /api/bots/<id>/calls``: how many of the bot's kept calls, newest first."""

    limit: Annotated[int, Between(1, "BOT_CALLS_KEPT"), DefaultSetting("BOT_CALLS_KEPT"),
                     Field(description="how many calls, newest first")] | None = None


class BotsQuery(Paging):
    status: Annotated[str, OneOf(("active", "paused", "pending", "rejected", "unhealthy"),
                                 code="bad_query")] | None = None


class MatchesQuery(CursorPaging):
    state: Annotated[str, OneOf(("queued", "running", "finished", "failed"),
                                code="bad_query")] | None = None
    bot: Annotated[int, Between(1, MAX_ID),
                   Field(description="only the matches this bot sat in")] | None = None


class RatingsQuery(Paging):
    family: Annotated[str, Field(description="a rating family (GET /api/families)")] = \
        "classic"


class HistoryQuery(CursorPaging):
    family: Annotated[str, Field(description="only this rating family")] | None = None


class LogQuery(Shape):
    format: Annotated[str, OneOf(("json", "jsonl"), code="bad_query")] = "json"


class TournamentsQuery(Paging):
    state: Annotated[str, OneOf(("created", "running", "finished", "cancelled"),
                                code="bad_query")] | None = None
