"""The kerasrs version (a module of its own, so that saving can write it without importing
the whole package)."""

__version__ = "0.1.0"
