"""Section 1: at-least-once delivery and the double charge (notebooks 01-02, lab 1)."""

from mercadofresco import moved


def __getattr__(name: str) -> object:  # names that moved away keep working a while (mercadofresco.moved)
    return moved.attribute(__name__, name)
