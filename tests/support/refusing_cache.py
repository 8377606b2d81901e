"""A cache backend for tests that must prove a path never reads a feed's body: Django's
Redis cache, except that any read of a ``:body:`` key is recorded and refused."""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache

BODY_MARK = ":body:"


class BodyRead(BaseException):
    """Raised on a body read; a BaseException, so no ``except Exception`` hides it."""


class BodyRefusingRedisCache(RedisCache):
    refused: list[str] = []  # every body key something tried to read, across instances

    def _refuse(self, keys) -> None:
        found = [key for key in keys if BODY_MARK in key]
        if found:
            BodyRefusingRedisCache.refused.extend(found)
            raise BodyRead(f"a feed body was read: {found}")

    def get(self, key, default=None, version=None):
        self._refuse([key])
        return super().get(key, default, version)

    def get_many(self, keys, version=None):
        self._refuse(list(keys))
        return super().get_many(keys, version)
