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
from mercadofresco.runtime import cleanup, endpoints, settings


def main(argv: list[str] | None = None) -> int:
    """The cleanup command: list (or, with --yes, delete) what the workbook left in an endpoint or in AWS."""
    parser = argparse.ArgumentParser(prog="python -m mercadofresco.runtime.cleanup_cli", description=main.__doc__)
    env = settings.read()
    env_mode = env.mode
    parser.add_argument(
        "--mode",
        choices=("endpoint", "aws"),
        default=env_mode if env_mode in ("endpoint", "aws") else None,
        required=env_mode not in ("endpoint", "aws"),
        help="default: MERCADOFRESCO_MODE",
    )
    parser.add_argument(
        "--endpoint-url",
        default=env.endpoint_url,
        help="for --mode endpoint, e.g. http://127.0.0.1:5000 (default: MERCADOFRESCO_ENDPOINT_URL)",
    )
    parser.add_argument("--region", default=settings.REGION)
    parser.add_argument("--run", help="only this run id (default: every run's resources)")
    parser.add_argument("--yes", action="store_true", help="delete; without it, only list")
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
        parser.error(f"could not reach {args.endpoint_url or 'AWS'}: {exc}")
    if not found:
        print(f"nothing tagged {cleanup.TAG_KEY} in {config.region}")
        return 0
    if not args.yes:
        print("\n".join(f"would delete {kind} {ident}" for kind, ident in found))
        print("run again with --yes to delete them")
        return 0
    print("\n".join(cleanup.delete(client, found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
