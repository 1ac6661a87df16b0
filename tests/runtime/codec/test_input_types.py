"""One input contract for ``decode`` and ``decode_batch``: every C-contiguous bytes-like object
(bytes, bytearray, memoryview, contiguous numpy arrays) decodes the same, and anything else fails
the same way, with the C accelerator and on the pure-Python path (a child process runs each)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

from codegen.runtime import accel
from support.paths import GENERATED
from support.processes import PYTHON

SCRIPT = textwrap.dedent(
    f"""\
    import json, sys
    import numpy as np
    sys.path.append({str(GENERATED)!r})
    from codegen.runtime import accel
    from customer import Customer

    customer = Customer(age=3, movie=["a", "b"], movie_ratings=np.array([1.5, 2.0], np.float32),
                        suggestion="s", suggestion_purchased=1.0, purchase_price=2.5)
    data = customer.encode()
    inputs = {{
        "bytes": data,
        "bytearray": bytearray(data),
        "memoryview": memoryview(data),
        "memoryview slice": memoryview(b"xx" + data)[2:],
        "uint8 array": np.frombuffer(data, np.uint8),
        "int8 array": np.frombuffer(data, np.int8),
        "strided array": np.frombuffer(data + data, np.uint8)[::2],
        "strided memoryview": memoryview(data + data)[::2],
        "str": "text",
        "int": 5,
        "list": list(data),
    }}

    def outcome(call):
        try:
            return ["ok", call()]
        except Exception as exc:
            return [type(exc).__name__, str(exc)]

    result = {{"accelerated": accel.speedups is not None}}
    for name, value in inputs.items():
        result["decode " + name] = outcome(lambda: Customer.decode(value) == customer)
        result["batch " + name] = outcome(
            lambda: Customer.decode_batch([value, data]).records() == [customer, customer]
        )
    print(json.dumps(result))
    """
)


def run(pure: bool) -> dict[str, object]:
    env = {**os.environ, accel.PURE_PYTHON_VARIABLE: "1" if pure else "0"}
    done = subprocess.run(
        [*PYTHON, "-c", SCRIPT], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_decode_takes_the_same_inputs_with_and_without_the_accelerator() -> None:
    pure, fast = run(pure=True), run(pure=False)
    assert pure.pop("accelerated") is False
    assert fast.pop("accelerated") is (accel.speedups is not None)
    assert pure == fast
    for kind in ("decode", "batch"):
        for name in ("bytes", "bytearray", "memoryview", "memoryview slice", "uint8 array"):
            assert pure[f"{kind} {name}"] == ["ok", True], (kind, name)
        assert pure[f"{kind} strided array"][0] == "ValueError"  # type: ignore[index]
        assert pure[f"{kind} strided memoryview"][0] == "BufferError"  # type: ignore[index]
        for name in ("str", "int", "list"):
            assert pure[f"{kind} {name}"][0] == "TypeError", (kind, name)  # type: ignore[index]
