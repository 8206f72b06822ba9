"""How much to retry: a budget that lets retries be at most a share (10 %) of the calls (notebook 6)."""

from __future__ import annotations

from mercadofresco.errors import check_range


class RetryBudget:
    """A token bucket: each first call adds `ratio` tokens, each retry spends one.

    Retries can then be at most about `ratio` of the calls (plus a burst of
    `max_tokens`). botocore's standard mode does the same with other numbers:
    a quota of 500, a retry costs 14 (5 if throttled), a success returns 1.
    """

    def __init__(self, ratio: float = 0.1, max_tokens: float = 10.0) -> None:
        check_range("ratio", ratio, 0, 1, low_excluded=True)
        check_range("max_tokens", max_tokens, 1, 100_000)
        self.ratio = ratio
        self.max_tokens = max_tokens
        self.tokens = max_tokens
        self.calls = 0
        self.retries = 0
        self.refused = 0

    def record_call(self) -> None:
        """A first attempt was made: it earns `ratio` of a retry."""
        self.calls += 1
        self.tokens = min(self.max_tokens, self.tokens + self.ratio)

    def try_retry(self) -> bool:
        """Spend a token on a retry; False (and nothing spent) when the budget is exhausted."""
        if self.tokens < 1:
            self.refused += 1
            return False
        self.tokens -= 1
        self.retries += 1
        return True
