"""Gluon (triton.experimental.gluon) kernels: the expert tier, schedules written by hand."""
