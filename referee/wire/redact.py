"""Keep bot URLs out of every text the referee records.

A bot's URL is its owner's secret: it often carries a secret path segment or a key in the
query (``https://host/s3cr3t-path?key=hunter2``), and whoever knows it can call the bot, flood
it or register it under another name.  The referee therefore never records URLs: a match
record names seats by the id its caller gave each player (``Player.label``), and every fault
detail a player reports goes through :meth:`UrlRedactor.scrub` before it is recorded.

Why a redaction pass at all, when the HTTP caller could simply build its details without the
URL?  Because the texts come from libraries: ``requests`` and ``urllib3`` put the host, the
port and the request path (query included) into their exception messages
(``HTTPSConnectionPool(host='h', port=443): Max retries exceeded with url:
/s3cr3t-path/move?key=hunter2 (Caused by SSLError(...))``), ``ssl`` names the host in
certificate errors, and a bot's own ``Location`` header can echo its URL.  Formatting every
one of those by hand is a list of cases that the next library version breaks; scrubbing the
finished text against the one URL the player knows closes the whole family.

What is removed from a text:

* every spelling of the URL's own parts: the whole URL, scheme-less forms, the host (any case,
  IDNA form), ``host:port``, the whole path and query, every path segment and query value of
  :data:`MIN_FRAGMENT` characters or more (shorter ones cannot hide a secret and removing them
  would garble ordinary words), each in raw, percent-decoded and percent-encoded form;
* anything that looks like a URL (``scheme://...``), whoever's it is;
* IP address literals (where a host name resolved to is also where the bot lives).
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections.abc import Iterable
from typing import Final
from urllib.parse import quote, unquote, urlsplit

MIN_FRAGMENT: Final = 5
"""Path segments and query values shorter than this are left alone (too short to be secret)."""
REDACTED: Final = "[redacted]"
"""What a removed part of a URL is replaced with."""

_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s'\"<>()\[\]{},]*")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])")
_IPV6 = re.compile(r"(?<![\w:.])\[?[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}\]?(?![\w:])")


def _ip_literal(text: str) -> bool:
    try:
        ipaddress.ip_address(text.strip("[]"))
    except ValueError:
        return False
    return True


def scrub_generic(text: str) -> str:
    """Remove URLs and IP address literals from ``text`` (no particular URL known)."""
    text = _ANY_URL.sub(REDACTED, text)
    text = _IPV4.sub(lambda m: REDACTED if _ip_literal(m.group(0)) else m.group(0), text)
    return _IPV6.sub(lambda m: REDACTED if _ip_literal(m.group(0)) else m.group(0), text)


def _spellings(part: str) -> set[str]:
    """A URL part as written, percent-decoded and percent-encoded (libraries differ)."""
    return {part, unquote(part), quote(unquote(part), safe="/"), quote(unquote(part), safe="")}


class UrlRedactor:
    """Scrubs the parts of known URLs (and any URL or IP literal) from texts.

    ``UrlRedactor([url])(text)`` is the text with nothing left that would tell a reader the
    bot's host, path or query.  Unparseable URLs are still removed verbatim.
    """

    def __init__(self, urls: Iterable[str]) -> None:
        fragments: set[str] = set()
        for url in urls:
            if url:
                fragments |= self._url_parts(url)
        # Longest first, so a whole URL goes before its host and path.
        self._fragments = sorted((f for f in fragments if f), key=len, reverse=True)
        self._pattern = (
            re.compile("|".join(re.escape(f) for f in self._fragments), re.IGNORECASE)
            if self._fragments
            else None
        )

    @staticmethod
    def _url_parts(url: str) -> set[str]:
        out = {url, url.rstrip("/")}
        try:
            parts = urlsplit(url)
            host = parts.hostname or ""
            port = parts.port
        except ValueError:
            return out
        if parts.netloc:
            out.add(parts.netloc)
            out.add(parts.netloc + parts.path)
        if host:
            out.add(host)
            out.add(f"[{host}]")
            with contextlib.suppress(UnicodeError):
                out.add(host.encode("idna").decode("ascii"))
            if port is not None:
                out.add(f"{host}:{port}")
                out.add(f"[{host}]:{port}")
        if parts.username:
            out |= _spellings(parts.username)
        if parts.password:
            out |= _spellings(parts.password)
        path = parts.path.rstrip("/")
        if path:
            out |= _spellings(path)
            for segment in path.split("/"):
                if len(unquote(segment)) >= MIN_FRAGMENT:
                    out |= _spellings(segment)
        for piece in (parts.query, parts.fragment):
            if not piece:
                continue
            out |= _spellings(piece)
            for pair in piece.split("&"):
                out |= _spellings(pair)
                _, _, value = pair.partition("=")
                if len(unquote(value)) >= MIN_FRAGMENT:
                    out |= _spellings(value)
        return out

    def scrub(self, text: str) -> str:
        """``text`` without the known URLs' parts, any other URL or any IP literal."""
        if not text:
            return text
        if self._pattern is not None:
            text = self._pattern.sub(REDACTED, text)
        return scrub_generic(text)

    __call__ = scrub


__all__ = ["MIN_FRAGMENT", "REDACTED", "UrlRedactor", "scrub_generic"]
