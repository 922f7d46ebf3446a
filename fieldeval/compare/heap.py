"""Giving the heap pages a large read has freed back to the operating system, between the phases of a comparison.

Reading a results file of 100,000 documents allocates and frees arrays and strings of every size
around the ones it keeps. glibc's allocator keeps the freed pages for later use, so the resident
memory of the next phase (the bootstrap) would sit on top of them, and a comparison of five such
runs held some 20 MB more than it uses. `malloc_trim(0)` returns every free page, wherever it lies
in the heap; it takes a few milliseconds. Dask's worker memory documentation recommends the same
call for memory a process no longer uses. Elsewhere than glibc (macOS, musl) this does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


@functools.cache
def _trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None).malloc_trim  # the C library the interpreter runs on
    except (OSError, AttributeError):  # not glibc
        return None


def release_freed_memory() -> None:
    """Return the heap pages freed so far to the operating system (glibc), so later peaks do not sit on them."""
    trim = _trim()
    if trim is not None:
        trim(0)
