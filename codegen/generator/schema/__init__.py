"""The input side of the generator: schema text -> schema documents.

``loader`` reads YAML with every value's line and column, ``model`` holds the pydantic models of the schema language,
and ``canonical`` reads the canonical JSON form back into the same document. :mod:`codegen.generator.load` lowers the
documents to IR.
"""
