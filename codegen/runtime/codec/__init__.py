"""The ``tf.train.Example`` / ``SequenceExample`` wire codec: varints and messages (``wire``, ``varint``), one codec
per feature kind (``features``, ``tensors``, ``sequences``), the one-call record decoder (``plan``), and columnar
batches (``batch``, ``columns``). Depends on numpy and :mod:`codegen.dtypes`; no file I/O.
"""
