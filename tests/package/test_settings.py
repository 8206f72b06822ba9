"""The MERCADOFRESCO_* settings: one reader, clear errors, and nobody else reads them."""

import re
from pathlib import Path

import pytest

from mercadofresco.runtime import settings

PACKAGE = Path(__file__).resolve().parents[2] / "mercadofresco"


def test_unset_variables_give_the_defaults():
    assert settings.read({}) == settings.Settings()
    assert settings.read({}).mode == "memory" and settings.read({}).real_time_budget_seconds == 600


def test_each_variable_is_read():
    read = settings.read(
        {
            "MERCADOFRESCO_MODE": "endpoint",
            "MERCADOFRESCO_ENDPOINT_URL": "http://127.0.0.1:5000",
            "MERCADOFRESCO_ALLOW_REAL_AWS": "Yes",
            "MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS": "90",
            "MERCADOFRESCO_DATABASE_URL": "postgresql://u@db:5432/aws",
        }
    )
    assert read == settings.Settings("endpoint", "http://127.0.0.1:5000", True, 90.0, "postgresql://u@db:5432/aws")


@pytest.mark.parametrize(("raw", "message"), [("ten", "must be a number of seconds; got 'ten'"), ("-1", "between 0")])
def test_a_bad_budget_names_its_variable(raw, message):
    with pytest.raises(settings.EndpointConfigError, match=f"MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS.*{message}"):
        settings.read({"MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS": raw})


def test_an_aws_host_is_refused_in_endpoint_mode_without_the_opt_in():
    with pytest.raises(settings.RealAwsRefusedError, match="MERCADOFRESCO_ALLOW_REAL_AWS=yes"):
        settings.EndpointConfig(mode="endpoint", endpoint_url="https://sqs.eu-south-2.amazonaws.com")
    assert settings.EndpointConfig(mode="endpoint", endpoint_url="http://127.0.0.1:5000").reaches_aws is False


def _other_readers(package: Path) -> list[str]:
    """Modules outside runtime/settings.py that read a MERCADOFRESCO_* variable from the environment.

    The grader's own variables (MERCADOFRESCO_GRADING_*, MERCADOFRESCO_WHOLE_RUN) are its protocol with the
    kernels it starts, so course/ is not counted.
    """
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative == "runtime/settings.py" or relative.startswith("course/"):
            continue
        source = path.read_text()
        if re.search(r"(environ|getenv)[^\n]*MERCADOFRESCO_", source):
            found.append(relative)
    return found


def test_only_the_settings_module_reads_the_settings():
    assert _other_readers(PACKAGE) == []


def test_a_second_reader_is_seen(tmp_path):
    (tmp_path / "runtime").mkdir()
    (tmp_path / "runtime" / "settings.py").write_text('os.environ.get("MERCADOFRESCO_MODE")\n')
    (tmp_path / "clock.py").write_text('mode = os.environ.get("MERCADOFRESCO_MODE", "memory")\n')
    assert _other_readers(tmp_path) == ["clock.py"]
