"""The workbook's settings: the one reader of the MERCADOFRESCO_* environment variables, and where calls may go.

| variable | what it sets | default |
|---|---|---|
| MERCADOFRESCO_MODE | "memory" (moto in this process), "endpoint" (a server you run) or "aws" | memory |
| MERCADOFRESCO_ENDPOINT_URL | the server of mode "endpoint", e.g. http://127.0.0.1:5000 | none |
| MERCADOFRESCO_ALLOW_REAL_AWS | "yes" lets a configuration reach real AWS (and bill it) | no |
| MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS | real time one notebook may wait outside the process | 600 |
| MERCADOFRESCO_DATABASE_URL | a PostgreSQL server for the outbox instead of the embedded one | none |

`EndpointConfig` is the part a boto3 client needs (mode, URL, region, the
opt-in), checked when it is made: the mock modes never reach an AWS host.
Variables that other tools of the workbook set for the processes they start
are theirs, not settings of the lesson's world.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from mercadofresco.errors import MercadoFrescoError, check_range
from mercadofresco.i18n import _

MODES = ("memory", "endpoint", "aws")
MODE = "MERCADOFRESCO_MODE"
ENDPOINT_URL = "MERCADOFRESCO_ENDPOINT_URL"
ALLOW_REAL_AWS = "MERCADOFRESCO_ALLOW_REAL_AWS"
REAL_TIME_BUDGET = "MERCADOFRESCO_REAL_TIME_BUDGET_SECONDS"
DATABASE_URL = "MERCADOFRESCO_DATABASE_URL"
DEFAULT_BUDGET_SECONDS = 600.0  # ten minutes: what a learner should wait for one notebook
MAX_BUDGET_SECONDS = 86_400.0
REGION = "eu-south-2"  # Spain
YES = ("1", "yes", "true")


class EndpointConfigError(MercadoFrescoError, ValueError):
    """The mode and the endpoint URL disagree, or a setting cannot be read."""


class RealAwsRefusedError(MercadoFrescoError):
    """The configuration would reach real AWS without the explicit opt-in."""


@dataclass(frozen=True)
class Settings:
    """What the MERCADOFRESCO_* variables say, read once; unset variables give the defaults."""

    mode: str = "memory"
    endpoint_url: str | None = None
    allow_real_aws: bool = False
    real_time_budget_seconds: float = DEFAULT_BUDGET_SECONDS
    database_url: str | None = None


def read(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings in `environ` (the process environment by default)."""
    environ = os.environ if environ is None else environ
    raw_budget = environ.get(REAL_TIME_BUDGET, "")
    try:
        budget = float(raw_budget) if raw_budget else DEFAULT_BUDGET_SECONDS
    except ValueError:
        said = _("{name} must be a number of seconds; got {value}")
        raise EndpointConfigError(said.format(name=REAL_TIME_BUDGET, value=repr(raw_budget))) from None
    check_range(REAL_TIME_BUDGET, budget, 0, MAX_BUDGET_SECONDS, EndpointConfigError)
    return Settings(
        mode=environ.get(MODE, "memory"),
        endpoint_url=environ.get(ENDPOINT_URL) or None,
        allow_real_aws=environ.get(ALLOW_REAL_AWS, "").lower() in YES,
        real_time_budget_seconds=budget,
        database_url=environ.get(DATABASE_URL) or None,
    )


def is_real_aws_endpoint(url: str) -> bool:
    """True if `url` points at an AWS service host (amazonaws.com, api.aws…)."""
    host = (urlparse(url).hostname or "").lower()
    return host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws")) or host in (
        "amazonaws.com",
        "api.aws",
    )


@dataclass(frozen=True)
class EndpointConfig:
    """Where the AWS calls go: moto in this process, an endpoint you run, or real AWS by explicit opt-in."""

    mode: str = "memory"
    endpoint_url: str | None = None
    region: str = REGION
    allow_real_aws: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            said = _("{name} must be one of {choices}; got {value}")
            raise EndpointConfigError(said.format(name="mode", choices=", ".join(MODES), value=repr(self.mode)))
        if self.mode == "memory" and self.endpoint_url:
            raise EndpointConfigError(_('mode "memory" takes no endpoint_url; use mode "endpoint" for a server'))
        if self.mode == "endpoint" and not self.endpoint_url:
            said = _('mode "endpoint" needs endpoint_url, e.g. {example}')
            raise EndpointConfigError(said.format(example="http://127.0.0.1:5000"))
        if self.endpoint_url and not self.endpoint_url.startswith(("http://", "https://")):
            said = _("endpoint_url must start with http:// or https://; got {value}")
            raise EndpointConfigError(said.format(value=repr(self.endpoint_url)))
        if self.reaches_aws and not self.allow_real_aws:
            said = _(
                "this configuration would reach real AWS (and bill it); pass allow_real_aws=True "
                "or set {variable}=yes if that is really what you want"
            )
            raise RealAwsRefusedError(said.format(variable=ALLOW_REAL_AWS))

    @property
    def reaches_aws(self) -> bool:
        """True in mode "aws", and for an endpoint URL that is an AWS host."""
        return self.mode == "aws" or bool(self.endpoint_url and is_real_aws_endpoint(self.endpoint_url))

    @classmethod
    def from_env(cls, **overrides: Any) -> EndpointConfig:
        """The endpoint the MERCADOFRESCO_* variables name, with `overrides` on top."""
        settings = read()
        values: dict[str, Any] = {
            "mode": settings.mode,
            "endpoint_url": settings.endpoint_url,
            "allow_real_aws": settings.allow_real_aws,
        }
        values.update(overrides)
        try:
            return cls(**values)
        except EndpointConfigError as exc:
            said = _(
                "{error} (read from {mode_variable}={mode} and {url_variable}={url}; unset both to run in this process)"
            )
            raise EndpointConfigError(
                said.format(
                    error=exc,
                    mode_variable=MODE,
                    mode=repr(values["mode"]),
                    url_variable=ENDPOINT_URL,
                    url=repr(values["endpoint_url"]),
                )
            ) from None
