"""Descriptors per operation: shared descriptors per key, job templates, run on a driver."""
