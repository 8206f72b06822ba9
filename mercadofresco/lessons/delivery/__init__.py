"""Section 1: at-least-once delivery and the double charge (notebooks 01-02, lab 1)."""
