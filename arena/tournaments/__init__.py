"""Tournaments: round robin, Swiss and knockout (four seats or heads-up), with duplicate play.

``schedule`` and ``scoring`` are pure (who plays whom and where; table results, standings and
tie-breaks); ``service`` drives a tournament from the database with one idempotent ``advance``
step; ``present`` turns it into JSON and the zip archive; ``api`` and ``cli`` expose it.
See ``docs/tournaments.md``.
"""
