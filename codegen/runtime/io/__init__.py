"""TFRecord files: framing and its checksums (``framing``), stream compression (``compression``), opening files for
reading (``files``), writing files atomically and TFRecord writers (``writer``), readers and decoded reading
(``reader``) with resynchronisation after corruption (``resync``), reports of skipped pieces (``skips``) and
record-offset indexes (``indexed``).
"""
