"""Started Python processes of the test suite install the loopback guard (see
loopback_guard.py beside this file); nothing happens unless the suite set the flag."""

import os

if os.environ.get("ARENA_TESTS_LOOPBACK_ONLY") == "1":
    import loopback_guard

    loopback_guard.install()
