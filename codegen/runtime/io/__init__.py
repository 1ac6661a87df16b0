"""TFRecord files: framing, compression, writers and readers with resynchronisation (``tfrecord``), reports of
skipped pieces (``skips``), reading decoded records (``records``) and record-offset indexes (``indexed``).
"""
