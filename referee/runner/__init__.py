"""Running and recording matches: deals between players under deadlines, logs, health checks.

:mod:`.match` runs a match (several deals, strikes, a time bank) through the players of
:mod:`referee.wire` and the deals of :mod:`referee.game`; it is the only place in the referee
that looks at a clock.  :mod:`.log` writes, reads and verifies match logs by replaying them;
:mod:`.health` is a submission health check, the opening of a real match played by the real
runner.  This room may import the game and the wire, never the command line.
"""
