"""What the learner's AWS requests become before the checker's moto reads them, and the call the checks read.

The kernel's boto3 clients send every request to the checker (`Lab.serve_aws`); before moto answers one, it is
written again so that moto reads exactly what the checks see: its JSON only (no form moto would run first), a
queue under the one URL SQS gives it, a receive that does not wait on a frozen clock. Each call is kept as data.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from typing import Any

MOTO_ACCOUNT = "123456789012"  # moto's account: the queue URLs it writes


def moto_answer(method: str, url: str, headers: dict, body: bytes) -> tuple[int, dict, bytes]:
    """A request answered by this process's moto: status, headers, body."""
    from botocore.awsrequest import AWSPreparedRequest
    from botocore.compat import HTTPHeaders
    from moto.core.models import botocore_stubber

    request = AWSPreparedRequest(str(method), url, HTTPHeaders(), body, stream_output=False)
    for key, value in headers.items():
        request.headers[key] = value
    answer = botocore_stubber.process_request(request)
    if answer is None:
        raise PermissionError(f"moto does not serve {url}")
    status, answer_headers, answer_body = answer
    answer_body = answer_body.encode() if isinstance(answer_body, str) else bytes(answer_body)
    return int(status), {str(k): str(v) for k, v in dict(answer_headers).items()}, answer_body


def without_long_poll(target: str, body: bytes) -> bytes:
    """A ReceiveMessage answered at once: WaitTimeSeconds 0 whatever the request or the queue says.

    moto's long poll waits until the clock passes its end, and a check's clock is frozen: on an empty queue it
    would hold the checker forever (measured: a 3 s poll had not returned after 120 s). Nothing else runs in the
    checker's world during a call, so a wait could only ever end empty: answering at once is the same answer.
    """
    if target != "AmazonSQS.ReceiveMessage":
        return body
    request = parsed(body)
    if not isinstance(request, dict):
        return body
    return json.dumps(dict(request, WaitTimeSeconds=0)).encode()


def json_only(body: bytes) -> bytes:
    """The same JSON object, written again with no `&` or `=` outside an escape. moto parses every body as a form
    too, whatever its content type, and runs the form's Action first: `"&Action=ReceiveMessage&"` inside a JSON
    string once ran a long poll under an X-Amz-Target of GetQueueAttributes, which the checker had let through."""
    text = json.dumps(parsed(body), separators=(",", ":"))  # & and = occur only inside strings: \u escapes there
    return text.replace("&", "\\u0026").replace("=", "\\u003d").encode()


def canonical_queue_url(body: bytes, region: str) -> bytes:
    """The request with its QueueUrl as SQS writes it: moto resolves a queue by the URL's last part alone, so
    `cola-x` and `https://elsewhere/1/cola-x` reach the queue `https://sqs.<region>.amazonaws.com/<account>/cola-x`
    is; the checks, which compare URLs, see every request to one queue under that one URL."""
    request = parsed(body)
    url = request.get("QueueUrl") if isinstance(request, dict) else None
    if type(url) is not str:
        return body
    canonical = f"https://sqs.{region}.amazonaws.com/{MOTO_ACCOUNT}/{url.rstrip('/').rsplit('/', 1)[-1]}"
    return body if url == canonical else json.dumps(dict(request, QueueUrl=canonical)).encode()


def parsed(data: bytes) -> Any:
    """The JSON in `data`, None when there is none or it is not JSON."""
    try:
        return json.loads(data) if data else None
    except ValueError:
        return None


def noted_call(service: str, target: str, request: bytes, answer: bytes) -> dict:
    """One AWS call as the checks read it (`Lab.aws_calls`): service, action, request, answer, when."""
    action = target.split(".")[-1] if target else ""
    at = dt.datetime.now(dt.UTC)  # the checker's virtual clock, under a check
    return {"service": service, "action": action, "request": parsed(request), "answer": parsed(answer), "at": at}


def one_of_each(headers: dict) -> dict:
    """The request's headers as text, refused if one is sent twice under two spellings: moto reads them ignoring
    case and takes the last, so `X-Amz-Target` and `x-amz-target` once let the checker note one action while
    moto ran another (a hostile session's attack, 7 December)."""
    plain = {str(key): str(value) for key, value in headers.items()}
    names = [key.lower() for key in plain]
    if len(set(names)) != len(names):
        raise PermissionError("a header sent twice (under two spellings): the checker serves one of each")
    return plain


def target_of(headers: dict) -> str:
    """The request's X-Amz-Target, whatever its spelling, if it names one action of one service: `Prefix.Action`.

    moto runs the last dotted part, so `AmazonSQS.x.ReceiveMessage` once ran a long poll the checker did not see
    as a receive; a target of any other shape is refused.
    """
    target = next((value for key, value in headers.items() if key.lower() == "x-amz-target"), "")
    if target and not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*\.[A-Za-z]+", target):
        raise PermissionError("an X-Amz-Target that is not one service's one action (Prefix.Action)")
    return target
