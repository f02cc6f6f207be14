"""Play: matches and what they are worth.

Creating and enqueuing matches (:mod:`.matches`), the ladder that keeps every bot playing
(:mod:`.ladder`), ratings (:mod:`.ratings`), which seed a retry deals (:mod:`.reseed`), which
deals stay secret (:mod:`.deal_secrecy`) and replay frames for the viewer (:mod:`.replay`).
Imports only :mod:`arena.core`.
"""
