"""The game itself: cards, rule sets, move generation, one deal as a state machine, scoring.

Everything here is pure computation over ints and frozen data: no clock, no I/O, no network,
standard library only.  A deal is fully determined by ``(rule set, seed, context, moves)``,
which is what lets a match log be replayed and verified years later.  This room imports no
other room of the referee (``tests/test_architecture.py`` checks it), so it can be read, tested
and reused without the HTTP caller or the match runner.

Reading order: :mod:`.cards` (cards as bits) and :mod:`.bits` (the shared bit tricks),
:mod:`.rules` and :mod:`.presets` (the house rules as data), :mod:`.compiled` (a rule set
compiled into lookup tables), :mod:`.movegen` and :mod:`.combos` (generating and classifying
plays), :mod:`.shuffling` and :mod:`.twister` (how a seed becomes a deck order, fixed forever:
docs/logs.md "How a seed deals"), :mod:`.state` (a deal), :mod:`.scoring`, :mod:`.view` (what
one seat may see, built incrementally per deal).
"""
