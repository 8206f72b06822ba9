"""The maintainers' tools (`python tools/nbtools.py …`); the tests import them as `tools.nbtools`."""
