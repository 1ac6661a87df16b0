"""The tfr-gen benchmark suite: ``python -m benchmarks`` (see ``benchmarks/__main__.py``).

Every contender (tfr-gen, protobuf, TensorFlow, vahidk's ``tfrecord``) runs on every workload in
one run, on the same deterministic data, after a check that they all produce the same bytes and
values. This package module imports nothing, so ``python -m benchmarks._vahidk_worker`` starts
without TensorFlow or tfr-gen.
"""
