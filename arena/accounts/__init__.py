"""Owner accounts: sign-up, passwords, sign-in with its per-client delay, API tokens, the
operator's reset, and which bots an account owns.

* :mod:`.passwords` - argon2id hashing (argon2-cffi), parameters from the settings;
* :mod:`.service` - the rules: usernames, sign-up, sign-in and its lockout, adopting a bot,
  API tokens and their scopes, the one-time reset;
* :mod:`.sessions` - the browser's signed-in account (Flask's signed cookie, as the bot
  owner's sign-in in :mod:`arena.web.owners`).

The tables are in :mod:`arena.core.models` (``Account``, ``AccountToken``, ``SignInDelay``).
"""
