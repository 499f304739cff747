"""CUDA kernel sources (``*.cu``, ``common.cuh``), shipped as package data; see cuda_sources."""
