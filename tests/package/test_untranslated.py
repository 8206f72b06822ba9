"""No new English-only sentence for a learner: each module's untranslated count only goes down (issue 51)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.package import untranslated

ROOT = Path(__file__).resolve().parents[2]
RECORD = Path(__file__).with_name("untranslated.json")


def test_no_module_says_more_english_only_sentences_than_recorded_and_the_record_follows_the_work():
    recorded, now = json.loads(RECORD.read_text()), untranslated.counts(ROOT / "mercadofresco")
    more = {
        module: (recorded.get(module, 0), count) for module, count in now.items() if count > recorded.get(module, 0)
    }
    assert not more, f"sentences a learner reads outside _() (recorded, now): {more}; wrap them in mercadofresco.i18n._"
    fewer = {module: (count, now.get(module, 0)) for module, count in recorded.items() if now.get(module, 0) < count}
    assert not fewer, f"fewer untranslated sentences (recorded, now): {fewer}; lower {RECORD.name} to match"


def test_the_gate_sees_a_sentence_in_each_place_a_learner_reads_one_and_not_inside_a_translating_call():
    source = """
raise ValueError(f"{name} must be positive")
print("orders sent: " + str(n))
axes.set_title("Retries over time")
axes.plot(x, y, label=f"{n} consumers in parallel")
Picture(figure, alt="A line that rises" if up else "A line that falls")
raise ValueError(_("{name} must be positive").format(name=name))
axes.set_title(_("Retries over time"))
print(name)
"""
    assert untranslated.sentences(source) == [2, 3, 4, 5, 6, 6]
