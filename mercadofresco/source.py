"""A learner's Python source read as data, never run: its tree, or None when it is not Python or too deep to parse.

CPython's parser does not survive every source: `x = ` followed by 100,000 `-` and a `1` raises MemoryError in
`ast.parse` (5,000 raise RecursionError), and after such an error CPython 3.11.7 can fail a later, ordinary
`ast.parse` in the same process ("SystemError: AST constructor recursion depth mismatch"). So a statement too
long to be parsed safely is not given to the parser at all: nesting costs at least one token a level, and a
statement of at most `MAX_STATEMENT_TOKENS` tokens (Python's own tokenizer counts them, in a loop) parses at
every depth it can reach. Brackets are the tokenizer's to limit (200 deep: a SyntaxError). An f-string is one
token to Python 3.11's tokenizer however deep the expressions inside it, so it counts as many tokens as it has
characters (a hostile session's attack: `f"{` and 3,000 `-` made the scan of a cell raise RecursionError).
And should the parser still fail on depth, the answer is the same: None.
"""

from __future__ import annotations

import ast
import io
import threading
import tokenize

# CPython 3.11 keeps the AST constructor's recursion depth in one state for the whole interpreter: two threads
# parsing at once can leave it mismatched, and a parse then fails with "SystemError: AST constructor recursion
# depth mismatch" (seen where two learners are read in two threads of one process). One parse at a time.
PARSING = threading.Lock()
MAX_STATEMENT_TOKENS = 2_000  # measured on CPython 3.11.7: 2,000 nested unary minus parse, 5,000 do not


def too_deep(source: str) -> bool:
    """True when one statement of `source` has more tokens than the parser is sure to survive."""
    count = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            size = len(token.string) if token.type == tokenize.STRING and _is_f_string(token.string) else 1
            count = 0 if token.type == tokenize.NEWLINE else count + size
            if count > MAX_STATEMENT_TOKENS:
                return True
    except (tokenize.TokenError, SyntaxError):  # not Python: the parser says so, safely
        return False
    return False


def _is_f_string(literal: str) -> bool:
    prefix = literal[: len(literal) - len(literal.lstrip("rRbBuUfF"))]
    return "f" in prefix.lower()


def without_magics(source: str) -> str:
    """A cell's source with IPython's `%` and `!` lines left empty: the Python in it, on the same lines."""
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


def tree(source: str) -> ast.Module | None:
    """The tree of Python `source` with IPython's `%` and `!` lines left out; None when it is not Python or too deep."""
    python = without_magics(source)
    if too_deep(python):
        return None
    try:
        with PARSING:
            return ast.parse(python)
    except (SyntaxError, ValueError):  # not Python, or a NUL byte in it
        return None
    except (RecursionError, MemoryError):  # deeper than the parser survives, however it got past too_deep
        return None
