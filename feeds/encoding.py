"""Which content coding a feed is sent in: ``Accept-Encoding`` read per RFC 9110 §12.5.3
and §12.4.2, and the gzip bytes of a body.

Feeds are the one response compressed (a feed has no form, no CSRF token and no secret
next to text an attacker chooses, so BREACH has nothing to recover); pages are not, and
there is no ``GZipMiddleware``: it would weaken the strong ETags (DESIGN.md) and compress
again on every request. A feed's gzip bytes are made once per feed version, when it is
built, and cached beside the identity bytes (feeds/cache.py).
"""

from __future__ import annotations

import gzip
import re

IDENTITY = "identity"
GZIP = "gzip"
AVAILABLE = (GZIP, IDENTITY)  # what a feed can be sent as; on a tie the first wins

# qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )   (RFC 9110 §12.4.2)
_QVALUE = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)")
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
# identity when the header neither names it nor has ``*``: acceptable, below any qvalue
# a client can write (the smallest is 0.001).
IMPLICIT_IDENTITY = 0.0005
# x-gzip is gzip (RFC 9110 §8.4.1.3: a recipient SHOULD consider it equivalent).
_ALIASES = {"x-gzip": GZIP}


def parse_accept_encoding(value: str) -> dict[str, float]:
    """The weight of each coding the header names, lower-cased (``*`` included).

    An element that is not ``coding [ ; q=qvalue ]`` is ignored (as if it were not sent),
    never guessed at; other parameters than ``q`` make the element malformed too. When
    a coding is named twice, the highest weight counts.
    """
    weights: dict[str, float] = {}
    for element in value.split(","):
        coding, *params = (part.strip(" \t") for part in element.split(";"))
        if not coding:
            continue  # empty list elements are allowed (RFC 9110 §5.6.1)
        if not _TOKEN.fullmatch(coding) or len(params) > 1:
            continue
        weight = 1.0
        if params:
            name, equals, qvalue = params[0].partition("=")
            if name.strip(" \t").lower() != "q" or not equals or not _QVALUE.fullmatch(qvalue.strip(" \t")):
                continue
            weight = float(qvalue.strip(" \t"))
        coding = coding.lower()
        coding = _ALIASES.get(coding, coding)
        weights[coding] = max(weight, weights.get(coding, 0.0))
    return weights


def choose_encoding(header: str | None) -> str:
    """The coding to send a feed in, given the request's ``Accept-Encoding`` (None when
    the header is absent).

    - No header: identity (any coding would be acceptable, but a client that says nothing
      may not decode one).
    - A coding named gets its weight; one not named gets the weight of ``*`` when there is
      one, else 0, except identity, which is acceptable unless ``identity;q=0`` or
      ``*;q=0`` (with no ``identity`` entry) excludes it: acceptable by default, it
      ranks below any coding the client named (``deflate, gzip;q=0.5`` gets gzip).
    - The acceptable one with the highest weight is sent, gzip on a tie. When neither is
      acceptable (``identity;q=0`` and no gzip), identity is sent anyway, as §12.5.3
      allows ("the origin server SHOULD send a response without any content coding"
      rather than a 406): a feed reader that gets bytes is better off than one with an
      error.
    """
    if header is None:
        return IDENTITY
    weights = parse_accept_encoding(header)
    star = weights.get("*")

    def weight(coding: str) -> float:
        if coding in weights:
            return weights[coding]
        if star is not None:
            return star
        return IMPLICIT_IDENTITY if coding == IDENTITY else 0.0

    best = max(AVAILABLE, key=lambda coding: (weight(coding), -AVAILABLE.index(coding)))
    return best if weight(best) > 0 else IDENTITY


def encoded_etag(identity_etag: str, encoding: str) -> str:
    """The strong ETag of one encoding of a body: the identity ETag, with ``-gzip`` inside
    the quotes for gzip (RFC 9110 §8.8.3: each representation its own entity tag)."""
    if encoding == IDENTITY:
        return identity_etag
    return identity_etag[:-1] + f"-{encoding}" + '"'


def gzip_bytes(body: bytes) -> bytes:
    """The gzip bytes of ``body``: the same bytes for the same input (no timestamp, no
    file name in the header), so a rebuild of one version keeps its strong ETag true."""
    return gzip.compress(body, compresslevel=6, mtime=0)
