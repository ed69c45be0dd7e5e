# SPDX-License-Identifier: MIT OR Apache-2.0
"""BucketedCache: one artifact per bucket of a ladder, built on first use.

The C++ ``rlx::BucketedCache<T>`` (include/rlx/bucketed_cache.h) with its
names: what the seed's BucketedCompileCache is to compiled graphs. An
executor keeps one compiled plan per bucket and builds it the first time a
key routes there. Not thread-safe: share one across threads under a lock.
"""

import operator
from typing import Callable, Generic, List, Optional, Tuple, TypeVar, cast

from ._core import BucketLadder

_T = TypeVar("_T")


class BucketedCache(Generic[_T]):
    """``build(upper)`` makes the artifact of a bucket whose compile extent
    is ``upper``; it is called at most once per bucket until that bucket is
    dropped (``retain_only``, ``clear``)."""

    def __init__(self, ladder: BucketLadder,
                 build: Callable[[int], _T]) -> None:
        if not isinstance(ladder, BucketLadder):
            raise TypeError("BucketedCache: ladder must be a BucketLadder, "
                            f"not {type(ladder).__name__}")
        if not callable(build):
            raise TypeError("BucketedCache: the builder is not callable")
        self._ladder = ladder
        self._build = build
        self._artifacts: List[Optional[_T]] = [None] * len(ladder)
        self._built = [False] * len(ladder)  # an artifact may be None

    @property
    def ladder(self) -> BucketLadder:
        """The ladder the cache routes keys with."""
        return self._ladder

    def get(self, key: int) -> Tuple[int, _T]:
        """Routes ``key`` to its bucket, builds that bucket's artifact on
        first use, and returns ``(upper, artifact)``. ValueError when
        ``key`` routes to no bucket (nothing is built); if ``build`` raises,
        nothing is cached and the exception propagates."""
        index = self._ladder.bucket_for(key)
        if index is None:
            raise ValueError(f"BucketedCache.get: key {key} routes to no "
                             "bucket of the ladder")
        upper = self._ladder[index].upper()
        if not self._built[index]:
            self._artifacts[index] = self._build(upper)
            self._built[index] = True
        # A built artifact is a _T, None included when build returns None.
        return upper, cast(_T, self._artifacts[index])

    def is_built(self, index: int) -> bool:
        """Whether bucket ``index`` holds a built artifact (False for an
        index that is not a bucket)."""
        index = operator.index(index)
        return 0 <= index < len(self._built) and self._built[index]

    def built_count(self) -> int:
        """The number of buckets holding a built artifact."""
        return sum(self._built)

    def retain_only(self, index: int) -> None:
        """Drops every artifact but bucket ``index``'s (memory pressure:
        keep the bucket in use). ValueError if ``index`` is not a bucket of
        the ladder, TypeError if it is not an integer; either drops
        nothing."""
        index = operator.index(index)
        if not 0 <= index < len(self._built):
            raise ValueError(f"BucketedCache.retain_only: index {index} is "
                             "not below the bucket count "
                             f"{len(self._built)}")
        for i in range(len(self._built)):
            if i != index:
                self._artifacts[i] = None
                self._built[i] = False

    def clear(self) -> None:
        """Drops every artifact."""
        self._artifacts = [None] * len(self._built)
        self._built = [False] * len(self._built)
