"""Counting words for messages: ``1 record``, ``2 records``, ``1,024 records``."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, word: str, many: str | None = None) -> str:
    """``count`` and ``word``, plural unless ``count`` is 1 (``many``: an irregular plural)."""
    return f"{count:,} {word if count == 1 else many or word + 's'}"
