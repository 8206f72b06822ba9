"""The per-section experiments and figures the notebooks call: each runs a model or an experiment and returns rows."""

from mercadofresco import moved


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
