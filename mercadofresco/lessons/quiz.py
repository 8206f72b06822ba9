"""Section 17's self-check (notebook 17): six questions, and the learner's answers compared by hash.

The notebook never holds the right answers: `check_answers` hashes each given answer (salted, lower-cased,
stripped) and compares it with `QUIZ_HASHES`, so a learner who reads the code learns nothing of them.
"""

from __future__ import annotations

import hashlib

from mercadofresco.i18n import N_, T_, _

QUIZ_SALT = "mercadofresco-07-05"
QUIZ = {  # the questions, shown where the learner reads them: `questions()`
    1: N_(
        "The producer re-sends an order. Which key stops the second charge? "
        "(a) the SQS MessageId (b) a UUID the consumer makes (c) cobro:{pedido_id}"
    ),
    2: N_(
        "A consumer dies holding EN_CURSO with no lock expiry. The order stays blocked until... "
        "(a) the visibility timeout (b) the record's TTL (c) the consumer restarts"
    ),
    3: N_("Which of these deserves a retry? (a) 400 (b) 402 (c) 404 (d) 429"),
    4: N_("SDK 5 attempts, maxReceiveCount 4, workflow 4 attempts: calls to a dead gateway for one order? (a number)"),
    5: N_(
        "Class 210's rule of thumb is visibility >= per-message timeout x batch. With 25 s and a batch of 10, the "
        "smallest visibility timeout it allows, in seconds? (a number; with Lambda the rule that binds is visibility "
        ">= the function timeout, 6 x advised: notebook 18)"
    ),
    6: N_(
        "Inspecting a DLQ you should: (a) delete what you read (b) use a short visibility timeout and delete nothing"
    ),
}
QUIZ_HASHES = {
    1: "40137a1fccae624f",
    2: "dbc9205d77c92fd8",
    3: "7495531ff9f335cc",
    4: "08708b228d014ead",
    5: "836d6c87ebe0f084",
    6: "822c16e4ed2767f2",
}


def questions() -> dict[int, str]:
    """The self-check's questions by number, in the learner's language."""
    return {question: _(text) for question, text in QUIZ.items()}


def answer_hash(question: int, answer: str) -> str:
    """The first 16 hex digits of sha256(salt:question:answer), answer lower-cased and stripped."""
    text = f"{QUIZ_SALT}:{question}:{str(answer).strip().lower()}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def check_answers(answers: dict[int, str]) -> list[dict[str, str]]:
    """One row per question: right, wrong or not answered; the right answers are never shown."""
    rows = []
    for question in QUIZ:
        given = str(answers.get(question, "")).strip()
        if not given:
            verdict = T_("not answered")
        else:
            verdict = T_("right") if answer_hash(question, given) == QUIZ_HASHES[question] else T_("wrong: look again")
        rows.append({"question": str(question), "your answer": given or "-", "verdict": verdict})
    return rows
