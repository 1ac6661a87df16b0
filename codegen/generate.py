"""The library entry point of the generator: ``from codegen.generate import generate``.

:func:`generate` is what the ``tfr-gen`` command runs; it returns a :class:`GenerateResult` with every schema
diagnostic as a value. Importing this module loads the generator only (no runtime, protobuf or C extension).
"""

from codegen.generator.api import GeneratedModule, GenerateResult, generate

__all__ = ["GenerateResult", "GeneratedModule", "generate"]
