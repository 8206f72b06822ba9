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
