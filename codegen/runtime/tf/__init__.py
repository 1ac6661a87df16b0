"""TensorFlow and protobuf interop: tfr-gen's own ``Example``/``SequenceExample`` message classes (``proto``) and the
TensorFlow parse specs with their post-processing (``parse``; TensorFlow is imported lazily).
"""
