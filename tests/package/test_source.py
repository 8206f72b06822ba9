"""A learner's source read as data: a statement too long for CPython's parser is never given to it."""

from __future__ import annotations

import ast
import subprocess
import sys

from mercadofresco import source

DEEP = "x = " + "-" * 100_000 + "1"


def test_a_statement_too_deep_for_the_parser_gives_no_tree_and_the_next_parse_still_works():
    assert source.too_deep(DEEP)
    assert source.tree(DEEP) is None
    assert source.tree("clock = 1\n%matplotlib inline\nfor i in range(3):\n    pass").body[0].targets[0].id == "clock"
    assert source.tree("def (:") is None  # not Python


def test_the_guard_is_needed_the_parser_itself_does_not_survive_that_statement():
    """Proof the guard can fail: without it, `ast.parse` of the same statement raises (in a process of its own)."""
    parsed = subprocess.run([sys.executable, "-c", f"import ast; ast.parse({DEEP!r})"], capture_output=True, text=True)
    assert parsed.returncode != 0 and "MemoryError" in parsed.stderr


def test_the_longest_statement_let_through_parses_at_every_depth_it_can_reach():
    depth = source.MAX_STATEMENT_TOKENS - 3  # `x`, `=`, the `1`: the rest a chain of unary minus, as deep as it gets
    deepest = "x = " + "-" * depth + "1"
    assert not source.too_deep(deepest)
    assert isinstance(source.tree(deepest), ast.Module)
    for form in ("not " * depth + "x", "a**" * (depth // 2) + "a", "lambda:" * (depth // 2) + "1"):
        assert source.tree("x = " + form) is not None, form[:10]


F_STRING_BOMB = '_ = 0 and f"{' + "-" * 3_000 + '1}"'  # a hostile session's cell: one token to the tokenizer


def test_an_f_string_counts_its_characters_and_a_deep_one_gives_no_tree():
    """Python 3.11's tokenizer sees an f-string as one token whatever the expressions inside it: counted by its
    characters, the bomb is too deep; the bare parser raises on it (in a process of its own), and a parse after
    it still works."""
    assert source.too_deep(F_STRING_BOMB)
    assert source.tree(F_STRING_BOMB) is None
    assert not source.too_deep('print(f"{x} and {y:.2f} " * 3)')
    assert source.tree("x = 1").body[0].targets[0].id == "x"
    parsed = subprocess.run([sys.executable, "-c", f"import ast; ast.parse({F_STRING_BOMB!r})"], capture_output=True)
    assert parsed.returncode != 0 and b"RecursionError" in parsed.stderr


def test_a_parse_that_raises_on_depth_gives_no_tree(monkeypatch):
    """The second guard, should a statement get past the count: RecursionError and MemoryError are None too."""
    monkeypatch.setattr(source, "too_deep", lambda text: False)
    assert source.tree(F_STRING_BOMB) is None
    assert source.tree("x = 1") is not None
