"""Request body parsers: DRF's, except that JSON nested deeper than Python's stack (a
body of 50,000 ``[``) is a 400 like any other malformed JSON, not a RecursionError."""

from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply.") from None
