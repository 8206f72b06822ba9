"""Range checks go through `errors.check_range`, so every setting's error reads the same way."""

from pathlib import Path

import pytest

from mercadofresco import errors, world

PACKAGE = Path(__file__).resolve().parents[2] / "mercadofresco"


def inline_range_checks(root: Path) -> list[str]:
    """Lines that spell out "must be between" instead of calling check_range."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if path.name == "errors.py" or "course" in path.relative_to(root).parts:  # course/: tooling, owned apart
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "must be between" in line:
                found.append(f"{path.relative_to(root)}:{number}: {line.strip()}")
    return found


def test_no_range_check_is_written_out():
    assert inline_range_checks(PACKAGE) == []


def test_the_guard_finds_a_written_out_check(tmp_path):
    (tmp_path / "setting.py").write_text('raise ValueError(f"rate must be between 1 and 10; got {rate}")\n')
    assert inline_range_checks(tmp_path) == [
        'setting.py:1: raise ValueError(f"rate must be between 1 and 10; got {rate}")'
    ]


def test_check_range_names_the_setting_its_range_and_why():
    with pytest.raises(ValueError, match=r"^batch_size must be between 1 and 10 \(SQS's limit\); got 11$"):
        errors.check_range("batch_size", 11, 1, 10, why="SQS's limit")
    with pytest.raises(world.WorldConfigError, match=r"^max_receive_count must be between 1 and 1000; got 0$"):
        errors.check_range("max_receive_count", 0, 1, 1000, world.WorldConfigError)


def test_check_range_accepts_both_bounds():
    errors.check_range("x", 1, 1, 10)
    errors.check_range("x", 10, 1, 10)


def test_a_range_open_at_its_low_end_refuses_the_low_value_and_says_so():
    errors.check_range("ratio", 0.01, 0, 1, low_excluded=True)
    errors.check_range("ratio", 1, 0, 1, low_excluded=True)
    with pytest.raises(ValueError, match=r"^ratio must be between 0 and 1 \(exclusive of 0\); got 0$"):
        errors.check_range("ratio", 0, 0, 1, low_excluded=True)
    with pytest.raises(ValueError, match=r"^base must be between 0 and 3600 \(exclusive of 0; seconds\); got 0$"):
        errors.check_range("base", 0, 0, 3600, why="seconds", low_excluded=True)
