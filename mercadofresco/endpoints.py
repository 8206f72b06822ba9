"""Where the AWS calls go: moto in this process, an endpoint you run, or real AWS by explicit opt-in.

The mock modes ("memory", "endpoint") sign with fake credentials and refuse a
host that is real AWS, so a mistyped URL can never create billed resources.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

import boto3
from botocore.config import Config

from mercadofresco.errors import MercadoFrescoError

if TYPE_CHECKING:  # world imports this module; the annotation only names its config
    from mercadofresco.cleanup import Ledger
    from mercadofresco.world import WorldConfig

MODES = ("memory", "endpoint", "aws")
FAKE_CREDENTIALS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


class RealAwsRefusedError(MercadoFrescoError):
    """The configuration would reach real AWS without the explicit opt-in."""


def is_real_aws_endpoint(url: str) -> bool:
    """True if `url` points at an AWS service host (amazonaws.com, api.aws…)."""
    host = (urlparse(url).hostname or "").lower()
    return host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws")) or host in (
        "amazonaws.com",
        "api.aws",
    )


def make_client(session: boto3.Session, config: WorldConfig, service: str, ledger: Ledger | None = None) -> Any:
    """A boto3 client that can only reach what `config` allows; with a `ledger`, what it creates is tagged and noted."""
    if config.mode == "memory":
        # Ignore AWS_ENDPOINT_URL* from the environment: moto answers every call here.
        return session.client(service, config=Config(ignore_configured_endpoint_urls=True))
    client = session.client(service, endpoint_url=config.endpoint_url)
    if ledger is not None:
        ledger.attach(client, service)
    return client


def make_session(config: WorldConfig) -> boto3.Session:
    """Fake credentials in the mock modes; the normal credential chain only for real AWS."""
    if config.mode == "aws":
        return boto3.Session(region_name=config.region)
    return boto3.Session(region_name=config.region, **FAKE_CREDENTIALS)
