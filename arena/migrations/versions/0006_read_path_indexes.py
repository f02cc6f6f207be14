"""read path: indexes for every list and page query at volume (issue 9)

Each index names the query it serves; the single-column indexes they make redundant (a
composite index whose first column is ``bot_id`` serves ``WHERE bot_id = ?`` as well) are
dropped.

Revision ID: 0006
Revises: 0004 (the head of main when rebased; re-chain as needed)
Create Date: 2026-12-01 09:30:00
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        # A bot's matches, newest first, keyset-paginated (bot page, /api/bots/<id>/matches,
        # /api/matches?bot=): WHERE bot_id = ? AND match_id < :cursor ORDER BY match_id DESC.
        batch_op.create_index("ix_match_seats_bot_id_match_id", ["bot_id", "match_id"])
        batch_op.drop_index("ix_match_seats_bot_id")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        # The latest finished matches (home page): WHERE state = 'finished'
        # ORDER BY finished_at DESC, id DESC LIMIT n.
        batch_op.create_index("ix_matches_state_finished_at", ["state", "finished_at", "id"])
        # Match lists filtered by state, keyset-paginated:
        # WHERE state = ? AND id < :cursor ORDER BY id DESC LIMIT n.
        batch_op.create_index("ix_matches_state_id", ["state", "id"])
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        # The leaderboard of a family: WHERE family = ? ORDER BY rating DESC, bot_id LIMIT n.
        batch_op.create_index("ix_ratings_family_rating", ["family", "rating", "bot_id"])
    with op.batch_alter_table("rating_events", schema=None) as batch_op:
        # A bot's rating history, keyset-paginated (/api/bots/<id>/ratings):
        # WHERE bot_id = ? AND id > :cursor ORDER BY id LIMIT n.
        batch_op.create_index("ix_rating_events_bot_id_id", ["bot_id", "id"])
        # Downsampled rating charts (bot page, leaderboard):
        # WHERE bot_id = ? AND family = ? AND games IN (<= CHART_POINTS evenly spaced games).
        batch_op.create_index("ix_rating_events_bot_id_family_games",
                              ["bot_id", "family", "games"])
        batch_op.drop_index("ix_rating_events_bot_id")
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        # A bot's newest checks: WHERE bot_id = ? ORDER BY id DESC LIMIT n.
        batch_op.create_index("ix_health_checks_bot_id_id", ["bot_id", "id"])
        batch_op.drop_index("ix_health_checks_bot_id")


def downgrade() -> None:
    with op.batch_alter_table("health_checks", schema=None) as batch_op:
        batch_op.create_index("ix_health_checks_bot_id", ["bot_id"])
        batch_op.drop_index("ix_health_checks_bot_id_id")
    with op.batch_alter_table("rating_events", schema=None) as batch_op:
        batch_op.create_index("ix_rating_events_bot_id", ["bot_id"])
        batch_op.drop_index("ix_rating_events_bot_id_family_games")
        batch_op.drop_index("ix_rating_events_bot_id_id")
    with op.batch_alter_table("ratings", schema=None) as batch_op:
        batch_op.drop_index("ix_ratings_family_rating")
    with op.batch_alter_table("matches", schema=None) as batch_op:
        batch_op.drop_index("ix_matches_state_id")
        batch_op.drop_index("ix_matches_state_finished_at")
    with op.batch_alter_table("match_seats", schema=None) as batch_op:
        batch_op.create_index("ix_match_seats_bot_id", ["bot_id"])
        batch_op.drop_index("ix_match_seats_bot_id_match_id")
