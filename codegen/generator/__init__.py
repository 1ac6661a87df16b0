"""The generator: schema text in, module text out. It never imports :mod:`codegen.runtime`.

Stages, each a function from one typed value to the next (I/O only at the ends):
``schema.loader`` (YAML with positions) -> ``schema.model`` (pydantic documents) -> ``lower`` (checked IR,
``ir``) -> ``canonical`` (canonical JSON and fingerprint) -> ``render`` (module source) -> ``api`` (files written,
or a ``--check`` report). Library users call :func:`codegen.generate.generate`.
"""
