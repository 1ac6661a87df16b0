"""Datasets and loading: sharded datasets with a manifest (``shards``, ``schemainfo``), the streaming ``Dataset`` of
batches over many files (``dataset``) and its PyTorch adapter (``pytorch``).
"""
