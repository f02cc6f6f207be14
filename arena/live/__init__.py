"""Live matches and tournaments: what spectators watch while it is played.

Data flows one way::

    worker (jobs.play_match) ──XADD──▶ Redis stream per match / tournament ──XREAD──▶
        relay (``arena live``, asyncio) ──server-sent events──▶ many browsers

* :mod:`arena.live.channel`: the stream names, the caps, and the publisher a worker's match
  reports to (a :class:`referee.runner.match.MatchWatcher`): only public information during a deal
  (:mod:`referee.game.spectator`), the hands once the deal is over.
* :mod:`arena.live.relay`: one asyncio process that reads each watched stream once and fans
  it out to every viewer, so no web thread is ever held by a viewer.  A stream's event ids
  are Redis stream ids, so a browser that reconnects (``Last-Event-ID``) resumes exactly after
  the last event it got: no gap, no duplicate.
"""
