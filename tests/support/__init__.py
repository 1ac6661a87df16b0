"""Helpers shared by the test modules (importable as ``support``: ``pythonpath`` in pyproject.toml).

One kind of helper per module; no module here holds tests:

* :mod:`support.paths`: the repository's directories;
* :mod:`support.processes`: child Python processes that import the same ``codegen`` as the tests;
* :mod:`support.modules`: the committed generated modules, and modules generated on the fly;
* :mod:`support.matrix`: the conformance matrices and the values of generated records;
* :mod:`support.tf_values`: values compared with TensorFlow's, and Examples TensorFlow builds;
* :mod:`support.messages`: protobuf-built reference messages;
* :mod:`support.wire_bytes`: wire bytes made by hand, and the wire tests' hypothesis pieces;
* :mod:`support.codecs`: the map entries the runtime's codecs write;
* :mod:`support.framing`: TFRecord framing made independently of the runtime;
* :mod:`support.speedups`: the C accelerator;
* :mod:`support.schemas`: schema mistakes and the generator's diagnostics;
* :mod:`support.shards`: a data set in several files;
* :mod:`support.tutorial`: the data sets of TensorFlow's tutorials;
* :mod:`support.cli`: running the command line, and its snapshots;
* :mod:`support.beam_pipelines`: the Beam pipelines (run by the Beam environment's Python).
"""
