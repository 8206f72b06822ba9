"""The cleanup command: what the workbook left in an endpoint or in AWS, found by its tag, listed or deleted.

python -m mercadofresco.runtime.cleanup_cli --mode aws         # lists what it would delete
python -m mercadofresco.runtime.cleanup_cli --mode aws --yes   # deletes it
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from botocore.exceptions import BotoCoreError

from mercadofresco.errors import MercadoFrescoError
from mercadofresco.i18n import _
from mercadofresco.runtime import cleanup, endpoints, settings


def main(argv: list[str] | None = None) -> int:
    """The cleanup command: list (or, with --yes, delete) what the workbook left in an endpoint or in AWS."""
    description = _(
        "The cleanup command: list (or, with --yes, delete) what the workbook left in an endpoint or in AWS."
    )
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.runtime.cleanup_cli", description=description)
    env = settings.read()
    env_mode = env.mode
    parser.add_argument(
        "--mode",
        choices=("endpoint", "aws"),
        default=env_mode if env_mode in ("endpoint", "aws") else None,
        required=env_mode not in ("endpoint", "aws"),
        help=_("default: {variable}").format(variable="MERCADOFRESCO_MODE"),
    )
    parser.add_argument(
        "--endpoint-url",
        default=env.endpoint_url,
        help=_("for --mode endpoint, e.g. {example} (default: {variable})").format(
            example="http://127.0.0.1:5000", variable="MERCADOFRESCO_ENDPOINT_URL"
        ),
    )
    parser.add_argument("--region", default=settings.REGION)
    parser.add_argument("--run", help=_("only this run id (default: every run's resources)"))
    parser.add_argument("--yes", action="store_true", help=_("delete; without it, only list"))
    args = parser.parse_args(argv)
    try:
        config = settings.EndpointConfig(
            mode=args.mode, endpoint_url=args.endpoint_url, region=args.region, allow_real_aws=args.mode == "aws"
        )
    except MercadoFrescoError as exc:
        parser.error(str(exc))
    session = endpoints.make_session(config)
    clients: dict[str, Any] = {}

    def client(service: str) -> Any:
        return clients.setdefault(service, endpoints.make_client(session, config, service))

    try:
        found = cleanup.find_tagged(client, args.run)
    except (BotoCoreError, ValueError) as exc:  # the endpoint is down, or not a URL
        parser.error(_("could not reach {where}: {error}").format(where=args.endpoint_url or "AWS", error=exc))
    if not found:
        print(_("nothing tagged {tag} in {region}").format(tag=cleanup.TAG_KEY, region=config.region))
        return 0
    if not args.yes:
        print("\n".join(_("would delete {kind} {resource}").format(kind=kind, resource=ident) for kind, ident in found))
        print(_("run again with {flag} to delete them").format(flag="--yes"))
        return 0
    print("\n".join(cleanup.delete(client, found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
