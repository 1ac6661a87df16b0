"""Write movie customers to a compressed TFRecord file and read them back, with the generated module.

Run from the repository root after ``tfr-gen schemas/``:  python examples/quickstart.py
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "generated"))

from customer import Customer  # noqa: E402  (the generated module)

customers = [
    Customer(
        age=29,
        movie=["The Shawshank Redemption", "Fight Club"],
        movie_ratings=[9.0, 9.7],
        suggestion="Inception",
        suggestion_purchased=1.0,
        purchase_price=9.99,
    ),
    Customer(age=41, movie=[], movie_ratings=[], suggestion="Alien", suggestion_purchased=0.0),
]

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "customers.tfrecord.gz"
    written = Customer.write_tfrecord(path, customers, compression="auto")
    back = list(Customer.read_tfrecord(path, compression="auto"))
    assert back == customers, "round trip changed the records"
    print(f"wrote and read back {written} customers ({path.stat().st_size} bytes, gzip)")
    print(back[0])
    print(Customer.feature_spec())
