"""The feeds' counters for /metrics (config/metrics.py): how often the cache answered,
and how often a client's copy was still good (304)."""

from __future__ import annotations

from prometheus_client import Counter

# hit: served from the cache; miss: built and stored; unavailable: the cache did not
# answer (built from the database, not stored); uncached: no feed version row (a
# database before migrate).
CACHE_LOOKUPS = Counter("releasecal_feed_cache_lookups", "Feed cache lookups, by result.", ["result"])
# By status: 200, 304 (the client's ETag or date still matched), 400, 404.
RESPONSES = Counter("releasecal_feed_responses", "Feed answers, by status.", ["status"])
