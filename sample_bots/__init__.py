"""Sample Big Two bots that speak only the wire protocol (HTTP + JSON, protocol v1).

* :mod:`sample_bots.sdk` turns ``choose(request) -> move id`` into a bot web server.
* :mod:`sample_bots.random_bot`: a uniformly random legal move.
* :mod:`sample_bots.greedy_bot`: the play with the most cards, lowest first.
* :mod:`sample_bots.planner_bot`: plans the hand, counts cards, keeps control cards.

Run one with ``python -m sample_bots.planner_bot --port 8003``; rank them with
``python bench/bot_ladder.py``.  Nothing here imports ``referee`` or ``arena``.
"""
