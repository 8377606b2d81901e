"""Read an exception request thread (email, pasted text, mbox): pure, nothing saved.

The pipeline is ``exceptions.reader.thread`` (``read_thread``), one module per phase:
``source`` (input to text), ``messages`` (lines and quote depth), ``authors`` (who wrote
each message), ``template`` (the template's fields), ``amendments`` (later changes of
the days), ``decision`` (the release team's decision, a proposal); ``inference`` (which
freeze and release), ``refusals`` (what a non-request is). Filing what a reading says
is a service: ``exceptions.services.exception_thread_file``.
"""

from exceptions.reader.amendments import Amendment
from exceptions.reader.authors import attribution_name, display_name, parse_address
from exceptions.reader.budget import ReadingTooLong, time_limit
from exceptions.reader.decision import DecisionReading, decision_outcome
from exceptions.reader.inference import Inference
from exceptions.reader.refusals import NON_REQUEST_MESSAGES, NotARequest, classify_non_request
from exceptions.reader.source import MAX_CHARS, UnreadableInput, source_text
from exceptions.reader.thread import ParsedRequest, ThreadReading, parse_request_email, read_thread

__all__ = [
    "MAX_CHARS",
    "NON_REQUEST_MESSAGES",
    "Amendment",
    "DecisionReading",
    "Inference",
    "NotARequest",
    "ParsedRequest",
    "ReadingTooLong",
    "ThreadReading",
    "UnreadableInput",
    "attribution_name",
    "classify_non_request",
    "decision_outcome",
    "display_name",
    "parse_address",
    "parse_request_email",
    "read_thread",
    "source_text",
    "time_limit",
]
