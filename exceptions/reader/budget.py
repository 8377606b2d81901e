"""A time limit on one reading, for callers that read text from anyone (the anonymous
``POST /api/v1/exceptions/parse/``). Every phase runs in time linear in the text
(``bench/regex_scan.py --reader`` checks it); the limit bounds what linear still costs on
a loaded machine. The phases call ``check()`` as they go; without a limit it is free.

The limit is the processor time of the reading's thread (``time.thread_time``), not the
wall clock: a machine busy with other work slows a reading down without making it
longer, and must not turn a good text into a 413."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

from releasecal.errors import DomainError

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("reader_deadline", default=None)


class ReadingTooLong(DomainError):
    """The text is too long for this caller to read, or took too long (413)."""

    status_code = 413
    code = "too_long"


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Readings inside the block raise ReadingTooLong once they have run ``seconds`` of
    processor time."""
    token = _deadline.set((time.thread_time() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def check() -> None:
    limit = _deadline.get()
    if limit is not None and time.thread_time() > limit[0]:
        raise ReadingTooLong(
            f"Reading this text took longer than {limit[1]:g} s, the limit here: paste the request "
            "and its replies only (a thread is a few thousand characters).",
            extra={"seconds": limit[1]},
        )
