"""Operations: the ``arena`` command (:mod:`.cli`, :mod:`.cli_app`), start-up checks
(:mod:`.startup`), the demo (:mod:`.demo`, :mod:`.demo_record`, :mod:`.tournament_demo`),
child processes (:mod:`.procs`) and the nginx edge on one machine (:mod:`.edge`).
The top room: it may import every other.
"""
