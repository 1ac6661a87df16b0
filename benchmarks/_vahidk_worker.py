"""Times vahidk's ``tfrecord.reader.tfrecord_loader`` over one TFRecord file, in its own process.

vahidk's ``tfrecord`` registers its own ``example.proto`` in protobuf's default pool, which clashes
with TensorFlow's, so the suite runs it here and reads the result as JSON.

Usage: ``python -m benchmarks._vahidk_worker JOB`` where ``JOB`` is a JSON object with ``path``,
``description`` (feature key -> ``"int"``/``"float"``/``"byte"``) and ``sequence_description``
(the same for the feature lists of a SequenceExample, or ``null``). It reads the first records
once to warm up, then times one full pass and prints ``{"records": N, "seconds": S}``.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from typing import Any

_WARM_UP_RECORDS = 64


def _loader(job: dict[str, Any]) -> Any:
    from tfrecord.reader import tfrecord_loader  # type: ignore[import-untyped]

    return tfrecord_loader(
        job["path"],
        None,
        job["description"],
        sequence_description=job["sequence_description"],
    )


def main(argv: list[str]) -> int:
    """Run the job given as the one argument; print its timing as JSON."""
    if len(argv) != 1:
        print("usage: python -m benchmarks._vahidk_worker JOB_JSON", file=sys.stderr)
        return 2
    job = json.loads(argv[0])
    for _ in itertools.islice(_loader(job), _WARM_UP_RECORDS):
        pass
    start = time.perf_counter()
    records = sum(1 for _ in _loader(job))
    seconds = time.perf_counter() - start
    print(json.dumps({"records": records, "seconds": seconds}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
