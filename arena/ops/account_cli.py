"""``arena account ...``: the operator's side of owner accounts.

    arena account show USER             the account, its bots and its live API tokens
    arena account reset-password USER   print a one-time reset link (valid ACCOUNT_RESET_TTL_S)
    arena account set-password USER     set a password typed at the prompt (or --stdin)

There is no e-mail reset: the web never resets a password on its own.  An owner who lost
theirs asks the operator, who checks who they are by a channel of their own (e.g. the owner
proves a bot's owner token, or answers from the address the operator knows) and then hands
over the link printed here.  The link works once; the new password signs every browser of
the account out.  See docs/operations.md, "Account recovery".
"""

from __future__ import annotations

import sys

import click
from flask import Flask
from sqlalchemy.orm import Session

from arena.accounts import service
from arena.core.models import Account
from arena.core.storage import get_db


def _app() -> Flask:
    from .cli_app import command_app

    return command_app()


def _account(s: Session, username: str) -> Account:
    account = service.find(s, username)
    if account is None:
        raise click.ClickException(f"no account {username!r}")
    return account


@click.group(help="Owner accounts: show one, print a reset link, set a password.")
def account() -> None:
    pass


@account.command("show")
@click.argument("username")
def show(username: str) -> None:
    """The account, its bots and its live API tokens."""
    app = _app()
    with app.app_context(), get_db(app).begin() as s:
        a = _account(s, username)
        click.echo(f"account {a.id} {a.username} (e-mail: {a.email or 'none'}), "
                   f"since {a.created_at:%Y-%m-%d}")
        for bot in service.bots_of(s, a):
            click.echo(f"  bot {bot.id} {bot.name} {bot.status}")
        for t in service.live_tokens(s, a):
            click.echo(f"  token {t.id} {t.name!r} [{t.scopes}]")


@account.command("reset-password")
@click.argument("username")
def reset_password(username: str) -> None:
    """Print a one-time link that sets a new password (replaces any earlier link)."""
    app = _app()
    with app.app_context(), get_db(app).begin() as s:
        token = service.start_reset(s, app, _account(s, username))
    base = str(app.config["PUBLIC_URL"] or "").rstrip("/")
    click.echo(f"{base}/account/reset?token={token}")
    hours = float(app.config["ACCOUNT_RESET_TTL_S"]) / 3600
    click.echo(f"valid once, for {hours:g} h; give it to the owner only after checking who "
               "they are", err=True)


@account.command("set-password")
@click.argument("username")
@click.option("--stdin", "from_stdin", is_flag=True, help="read the password from stdin")
def set_password(username: str, from_stdin: bool) -> None:
    """Set the account's password (every browser signed in to it is signed out)."""
    app = _app()
    if from_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = click.prompt("new password", hide_input=True, confirmation_prompt=True)
    with app.app_context(), get_db(app).begin() as s:
        a = _account(s, username)
        problem = service.password_problem(app, password, a.username)
        if problem:
            raise click.ClickException(f"password: {problem}")
        service.set_password(s, app, a, password)
    click.echo(f"password of {username} set")
