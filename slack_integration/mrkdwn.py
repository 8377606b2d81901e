"""The one way text goes into a Slack message.

Slack reads ``<!channel>``, ``<@U123>``, ``<#C123>`` and ``<https://x|label>`` in mrkdwn
as live mentions and links, and (unless a text object is ``verbatim``) also turns bare
URLs, ``@here`` and ``#channel`` into live ones. So:

- every value that did not come from our own code (request fields, names, titles, zones
  typed by people, echoed command arguments) goes through :func:`escape` (``&``, ``<``,
  ``>``: Slack's three escapes) before it is put into mrkdwn;
- truncation happens after escaping and never cuts an entity in half;
- every mrkdwn text object is ``verbatim: true``, so nothing in it is parsed into a
  mention or link except the ``<url|label>`` links our own code writes.

Every message builder (request posts, slash-command answers, reminders) uses these.
"""

from __future__ import annotations

MAX_SECTION = 3000  # Slack refuses a section text over 3000 characters
MAX_HEADER = 150
MAX_BLOCKS = 50

_ENTITY_TAIL = ("&", "&a", "&am", "&amp", "&l", "&lt", "&g", "&gt")


def escape(text: object) -> str:
    """``text`` with Slack's three control characters escaped: it shows as written."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def clip(mrkdwn: str, limit: int = MAX_SECTION) -> str:
    """Cut already-escaped mrkdwn to ``limit`` characters (an ellipsis marks the cut),
    never inside an ``&amp;``/``&lt;``/``&gt;`` entity."""
    if len(mrkdwn) <= limit:
        return mrkdwn
    cut = mrkdwn[: limit - 1]
    for tail in _ENTITY_TAIL:
        if cut.endswith(tail):
            cut = cut[: -len(tail)]
            break
    return cut + "…"


def link(url: str, label: str) -> str:
    """A link our own code writes (``url`` is ours: the site, a KEP issue we stored)."""
    return f"<{url.replace('|', '%7C').replace('>', '%3E').replace('<', '%3C')}|{escape(label)}>"


def text_object(mrkdwn: str, limit: int = MAX_SECTION) -> dict:
    return {"type": "mrkdwn", "text": clip(mrkdwn, limit), "verbatim": True}


def section(mrkdwn: str) -> dict:
    return {"type": "section", "text": text_object(mrkdwn)}


def context(mrkdwn: str) -> dict:
    return {"type": "context", "elements": [text_object(mrkdwn)]}


def plain(text: str, limit: int) -> dict:
    """A ``plain_text`` object: Slack shows it literally and parses nothing in it."""
    text = str(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return {"type": "plain_text", "text": text, "emoji": False}


def header(text: str) -> dict:
    return {"type": "header", "text": plain(text, MAX_HEADER)}


def fallback(text: str) -> str:
    """The notification text of a message (``text`` beside ``blocks``), escaped."""
    return clip(escape(text), MAX_SECTION)
