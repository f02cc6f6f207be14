"""Talking to bots: the wire protocol, the HTTP caller and what guards it.

:mod:`.protocol` builds the requests a bot receives and judges its answers (pure data, built
from :mod:`referee.game.view`); :mod:`.httpbot` calls a bot under one hard deadline (the only
module of the referee that needs a third-party package: ``h11``, the HTTP/1.1 parser);
:mod:`.netguard` decides which addresses may be called at all; :mod:`.redact` keeps bot URLs
out of every recorded text; :mod:`.players` puts an HTTP bot and an in-process function behind
one interface.  This room may import :mod:`referee.game`, never the runner or the command line.
"""
