"""The English names of months and weekdays, the one table of them: rendering writes
them, and every reader of written dates (``releasecal.tz.text``, the schedule importer,
the exception reader) looks them up here."""

from __future__ import annotations

import re

WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = (
    "January", "February", "March", "April", "May", "June",
    "July", "August", "September", "October", "November", "December",
)  # fmt: skip

# How people write them, for a regular expression (read case-insensitively; no group):
# the full name, its first three letters, and the other abbreviations in use
# ("Sept", "Tues", "Weds", "Thur", "Thurs"). A longer word is not a name: "Marching".
MONTH_WORD = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?![a-z])"
)
WEEKDAY_WORD = (
    r"(?:mon(?:day)?|tue(?:s(?:day)?)?|wed(?:s|nesday)?|thu(?:r(?:s(?:day)?)?)?|fri(?:day)?|sat(?:urday)?"
    r"|sun(?:day)?)(?![a-z])"
)
_MONTH_RE = re.compile(MONTH_WORD, re.I)
_WEEKDAY_RE = re.compile(WEEKDAY_WORD, re.I)


def month_number(word: str | None) -> int | None:
    """``"Sept"``, ``"june"``, ``"JAN."`` -> 9, 6, 1; None when the word is not a month."""
    return _number(word, _MONTH_RE, MONTHS, start=1)


def weekday_number(word: str | None) -> int | None:
    """``"Thurs"``, ``"monday"`` -> 3, 0 (Monday is 0, as ``date.weekday``); None when
    the word is not a weekday."""
    return _number(word, _WEEKDAY_RE, WEEKDAYS, start=0)


def _number(word: str | None, regex: re.Pattern[str], names: tuple[str, ...], *, start: int) -> int | None:
    word = (word or "").strip(" .,")
    if not regex.fullmatch(word):
        return None
    prefix = word[:3].lower()
    return next(i for i, name in enumerate(names, start=start) if name.lower().startswith(prefix))
