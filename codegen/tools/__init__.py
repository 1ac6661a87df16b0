"""Tools for TFRecord data: the ``infer``, ``validate``, ``cat``, ``stats`` and ``index`` commands.

They need neither TensorFlow nor a generated module: :mod:`codegen.tools.dynamic` builds a record's
codecs from its schema at run time. Scans over many files go through :mod:`codegen.tools.scan`,
which passes over corrupt stretches and shows progress (:mod:`codegen.tools.progress`).
"""
