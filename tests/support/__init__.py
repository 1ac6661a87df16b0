"""Helpers shared by the test modules (importable as ``support``: ``pythonpath`` in pyproject.toml).

Each module holds one kind of helper: :mod:`support.paths` the repository's directories,
:mod:`support.modules` generating and importing modules, :mod:`support.matrix` the conformance
matrices, :mod:`support.tf_values` values compared with TensorFlow's, :mod:`support.messages`
protobuf-built reference messages, :mod:`support.codecs` the map entries of the runtime's codecs,
:mod:`support.framing` TFRecord framing made independently of the runtime,
:mod:`support.speedups` the C accelerator, :mod:`support.shards` multi-file data sets,
:mod:`support.tutorial` the tutorials' data sets, :mod:`support.cli` running the command line and
comparing its output with snapshots, and :mod:`support.beam_pipelines` the Beam pipelines (run by
the Beam environment's Python). No module here holds tests.
"""
