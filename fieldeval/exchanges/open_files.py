"""How many cases may be in flight at once within the process's open-file limit.

Each case in flight holds files open: the event loop Strands' agent runs its call on (an epoll
handle and a socket pair), the connection to the provider, and what the client libraries keep.
Past the process's limit (`ulimit -n`, often 256 or 1024) a new socket or event loop fails with
"Too many open files", in whichever case happens to ask next, and the run fails cases it could
have recorded. So a run keeps at most as many cases in flight as the files still free allow, at
`FILES_PER_CASE` each with `HEADROOM` to spare, and says so when that is fewer than asked.
"""

from __future__ import annotations

import os

# Files one case in flight holds: about 4 measured through OpenAIModel and BedrockModel against a local
# server (the peak count of the process's open files with 1, 10 and 40 cases in flight), doubled for
# what other providers and TLS may add.
FILES_PER_CASE = 8
HEADROOM = 32  # files kept free for everything else the run opens (cassettes, modules, logs)


def cases_in_flight(requested: int, cases: int) -> tuple[int, str | None]:
    """`requested`, or fewer when the open-file limit would not hold that many of `cases` in flight.

    Returns the number to run and, when it is lower than asked, the one line that says why.
    """
    limit = open_file_limit()
    wanted = min(requested, cases)
    if limit is None:
        return requested, None
    already = files_open()
    allowed = max(1, (limit - already - HEADROOM) // FILES_PER_CASE)
    if wanted <= allowed:
        return requested, None
    needed = already + HEADROOM + wanted * FILES_PER_CASE
    return allowed, (
        f"--concurrency {requested}: this process may open {limit} files (`ulimit -n`), {already} already open; "
        f"at about {FILES_PER_CASE} per case in flight that leaves room for {allowed}, so {allowed} case(s) run at "
        f"a time (raise the limit, e.g. `ulimit -n {needed}`, to run {wanted} at once)."
    )


def open_file_limit() -> int | None:
    """The soft limit on open files, or None where there is none (or no way to read it)."""
    try:
        import resource
    except ImportError:  # not a Unix: no limit of this kind
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def files_open() -> int:
    """How many files this process has open now (0 where that cannot be read)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return max(0, len(os.listdir(folder)) - 1)  # less the one listing the folder
        except OSError:
            continue
    return 0
