"""Datasets and loading: sharded datasets (``shards``) with a manifest (``manifest``, ``schemainfo``), the streaming
``Dataset`` of batches over many files (``dataset``) and its PyTorch adapter (``pytorch``).
"""
