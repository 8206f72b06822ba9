"""What `selfcheck.here` shows reads well in a notebook: no absolute path, no word split, a half-done lab's missing
name said once (the checks' verdicts are not touched: only how they are said)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from mercadofresco.course import selfcheck
from mercadofresco.course.handout import labs
from mercadofresco.course.handout import selfcheck_report as shown
from tests.labs import lab_variants

HINT = "consumer charges order {n} once, however many copies of its message arrive and in whatever order they come"
HALF_DONE = [  # a lab whose exercise 1 is not written yet, a check cell of seven checks, a cell that opens a file
    "import os\nfrom mercadofresco.course import checks",
    "# Define consumer (a function of one order).\n"
    "# YOUR CODE HERE: replace the next line with your solution.\n"
    'raise NotImplementedError("your code here")',
    "# Public check (a)\n"
    'with checks.part("(a)"):\n'
    "    for n in range(7):\n"
    f"        checks.expect(lambda: consumer(n) == 1, f{HINT!r})",
    'open(os.path.join(os.getcwd(), "datos", "pedidos.csv"))',
]


def half_done_report(folder: Path) -> dict:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in HALF_DONE]
    return selfcheck.report_of(lab_variants.write(notebook, folder / "lab9_half_done.ipynb"), hidden_too=False)


def words(text: str) -> str:
    return " ".join(text.split())


def test_a_half_done_lab_says_the_missing_name_once_and_where_it_should_be_set(tmp_path):
    report = half_done_report(tmp_path)
    text, html = shown.as_text(report), shown.as_html(report)
    assert [cell["number"] for cell in report["cells"] if cell["problem"]] == [2, 3, 4]
    assert len(report["cells"][2]["problem"]) == 7  # what the checks decided is all there: seven failed
    said = "7 checks need `consumer`, which cell [2] should set: finish that cell first"
    assert said in words(text) and said in html
    assert text.count("`consumer`") == 1 and html.count("`consumer`") == 1
    assert "could not run" not in text + html and "NameError" not in text + html


def test_the_report_shows_no_absolute_path(tmp_path):
    report = half_done_report(tmp_path)
    text, html = shown.as_text(report), shown.as_html(report)
    assert str(tmp_path) not in json.dumps(report) + text + html
    assert "No such file or directory: 'datos/pedidos.csv'" in words(text)  # from the lab's folder


def test_no_word_is_split_in_either_form(tmp_path):
    report = half_done_report(tmp_path)
    text, html = shown.as_text(report), shown.as_html(report)
    for line in text.splitlines():  # broken between words at WIDTH; only a word longer than that may stick out
        assert len(line) <= shown.WIDTH or " " not in line.strip(), line
    failing = [cell for cell in report["cells"] if cell["problem"]]
    words_said = " ".join(line for cell in failing for line in shown.problem_lines(cell, report["named_in"]))
    assert set(words_said.split()) <= set(text.split())  # every word whole, none cut in two
    # JupyterLab breaks an output's <pre> anywhere (word-break: break-all): each of ours says to break between words
    assert html.count("<pre") == html.count(shown.PRE) > 0


def test_paths_are_shown_from_the_labs_folder_the_workbook_or_home_and_nothing_else_is_touched():
    folder = labs.ROOT / "labs"
    said = (
        f"{folder}/datos/pedidos.csv; '{labs.ROOT}/mercadofresco/orders.py'; ({Path.home()}/notas/x.txt); "
        "/usr/lib/python3/dist-packages/boto3/session.py; 1/2 of 10; labs/lab1.ipynb; "
        "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html"
    )
    assert shown.relative({"said": [said], "number": 3}, folder) == {
        "said": [
            "datos/pedidos.csv; 'mercadofresco/orders.py'; (~/notas/x.txt); session.py; 1/2 of 10; labs/lab1.ipynb; "
            "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html"
        ],
        "number": 3,
    }


def test_only_the_checks_that_could_not_run_are_grouped_and_a_failed_check_keeps_its_words():
    cell = {
        "number": 6,
        "problem": [
            "CheckFailed: each order charged once (seen: {'PED-2026-084417': 2})",
            "the table holds cobro:<pedido_id> (the check could not run: TypeError: 'NoneType' is not callable)",
            "the replay ran (the check could not run: NameError: name 'replay' is not defined)",
            "the DLQ is empty (the check could not run: NameError: name 'replay' is not defined)",
            "no key twice (the check could not run: NameError: name 'keys' is not defined)",
            "FALLIDO kept (the check could not run: NotImplementedError: your code here)",
            "a poison body reaches the DLQ (the check could not run: NotImplementedError: your code here)",
        ],
    }
    assert shown.problem_lines(cell, {"replay": 5, "keys": 5}) == [
        "CheckFailed: each order charged once (seen: {'PED-2026-084417': 2})",
        "the table holds cobro:<pedido_id> (the check could not run: TypeError: 'NoneType' is not callable)",
        "3 checks need `replay` and `keys`, which cell [5] should set: finish that cell first",
        "2 checks could not run: NotImplementedError: your code here",
    ]
    assert shown.problem_lines(cell, {})[2] == (
        "3 checks need `replay` and `keys`, which no cell above sets: define them as asked"
    )


def test_the_cell_that_should_set_a_name_is_the_one_that_sets_or_asks_for_it_before_one_that_uses_it():
    sources = [
        "%matplotlib inline\nclock = 1",
        "# Define POLL_SECONDS and CLAIM_SQL.\nraise NotImplementedError('your code here')",
        "first = publish(POLL_SECONDS)\nprint(fixed_config)",
        "def publish(now):\n    return now",
    ]
    assert shown.named_in(sources, {"POLL_SECONDS", "CLAIM_SQL", "first", "fixed_config", "publish", "nowhere"}) == {
        "POLL_SECONDS": 2,
        "CLAIM_SQL": 2,
        "first": 3,
        "fixed_config": 3,  # no cell sets it: the first that uses it
        "publish": 4,
    }


def test_a_cell_too_deep_for_the_parser_names_nothing_and_the_cells_after_it_are_still_read():
    """A statement of 100,000 unary minus once crashed the report (MemoryError), and CPython then failed later
    parses in the same process: such a cell is read by its comments alone (`mercadofresco.source`)."""
    sources = ["# Define POLL_SECONDS.\nx = " + "-" * 100_000 + "1", "POLL_SECONDS = 2", "print(first)"]
    assert shown.named_in(sources, {"POLL_SECONDS", "first", "x"}) == {"POLL_SECONDS": 1, "first": 3}


def test_a_lab_handed_out_says_each_of_its_missing_names_once(tmp_path):
    """Lab 1 as handed out: the public checks' cells need names their exercises set; each said once, with its cell."""
    path = lab_variants.write(labs.handed_out("lab1"), tmp_path / "lab1_double_charge.ipynb")
    report = selfcheck.report_of(path, hidden_too=False)
    text = words(shown.as_text(report))
    assert "5 checks need `fix_order`, `root_fix` and `fixed_config`, which cell [9] should set" in text
    for name in ("run_visibility", "fix_order", "fixed_config", "more_likely", "replay"):
        assert len(re.findall(rf"`{name}`", text)) == 1, name
    assert "is not defined" not in text.split("cell [4]")[1]  # the checks' NameErrors are all said as needs
