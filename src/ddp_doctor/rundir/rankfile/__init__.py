"""One rank file (RUN/ranks/rank-NNNNN.jsonl) read into columns: fast where it can, tolerant always.

Three steps, one module each:

* :mod:`.scan` — open the file safely (no symlink, FIFO or device; up to its size at open time),
  find the `step` lines by numpy, parse them with Arrow (a tolerant per-line path for the rest)
  and validate the steps: problems, not exceptions;
* :mod:`.columns` — the data model (:class:`RankData`, :class:`StepColumns`, :class:`Problems`) and
  the validated Arrow step table turned into the numpy columns the analysis reads;
* :mod:`.cache` — the columns cached as Arrow IPC in RUN/.ddp-doctor-cache/, keyed by the file's
  size, mtime, inode and the step schema, and :func:`read_rank` (cache or parse).

Tunables (``CHUNK_LINES``, ``CACHE_MIN_BYTES``) live in their module and are not re-exported here:
patch ``rankfile.scan.CHUNK_LINES`` / ``rankfile.cache.CACHE_MIN_BYTES`` in tests.
"""

from __future__ import annotations

from ddp_doctor.core.safe_io import data_end, open_regular, read_regular
from ddp_doctor.rundir.rankfile.cache import (
    cache_path,
    cacheable,
    file_key,
    key_of,
    load_cache,
    read_rank,
    save_cache,
)
from ddp_doctor.rundir.rankfile.columns import (
    CLIP_COLUMNS,
    Problems,
    RankData,
    StepColumns,
    compact,
    num,
    to_columns,
)
from ddp_doctor.rundir.rankfile.scan import (
    duplicates_note,
    file_problems,
    hole_note,
    parse_rank,
    parse_rank_bytes,
    step_schema,
    truncated_note,
)

__all__ = [
    "CLIP_COLUMNS",
    "Problems",
    "RankData",
    "StepColumns",
    "cache_path",
    "cacheable",
    "compact",
    "data_end",
    "duplicates_note",
    "file_key",
    "file_problems",
    "hole_note",
    "key_of",
    "load_cache",
    "num",
    "open_regular",
    "parse_rank",
    "parse_rank_bytes",
    "read_regular",
    "read_rank",
    "save_cache",
    "step_schema",
    "to_columns",
    "truncated_note",
]
