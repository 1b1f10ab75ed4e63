from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.audit_page import AuditPage
from ...models.error_body import ErrorBody
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    actor: str | Unset = UNSET,
    payment_id: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["actor"] = actor

    params["payment_id"] = payment_id

    params["limit"] = limit

    params["cursor"] = cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/audit",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AuditPage | ErrorBody | None:
    if response.status_code == 200:
        response_200 = AuditPage.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())



        return response_403

    if response.status_code == 422:
        response_422 = ErrorBody.from_dict(response.json())



        return response_422

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[AuditPage | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    actor: str | Unset = UNSET,
    payment_id: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[AuditPage | ErrorBody]:
    """ Manual actions (resolves, polls asked for, console sign-ins), newest
    first: who, what, when, from which address, and what came of it.

    Args:
        actor (str | Unset):
        payment_id (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditPage | ErrorBody]
     """


    kwargs = _get_kwargs(
        actor=actor,
payment_id=payment_id,
limit=limit,
cursor=cursor,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    actor: str | Unset = UNSET,
    payment_id: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> AuditPage | ErrorBody | None:
    """ Manual actions (resolves, polls asked for, console sign-ins), newest
    first: who, what, when, from which address, and what came of it.

    Args:
        actor (str | Unset):
        payment_id (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditPage | ErrorBody
     """


    return sync_detailed(
        client=client,
actor=actor,
payment_id=payment_id,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    actor: str | Unset = UNSET,
    payment_id: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[AuditPage | ErrorBody]:
    """ Manual actions (resolves, polls asked for, console sign-ins), newest
    first: who, what, when, from which address, and what came of it.

    Args:
        actor (str | Unset):
        payment_id (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AuditPage | ErrorBody]
     """


    kwargs = _get_kwargs(
        actor=actor,
payment_id=payment_id,
limit=limit,
cursor=cursor,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    actor: str | Unset = UNSET,
    payment_id: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> AuditPage | ErrorBody | None:
    """ Manual actions (resolves, polls asked for, console sign-ins), newest
    first: who, what, when, from which address, and what came of it.

    Args:
        actor (str | Unset):
        payment_id (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AuditPage | ErrorBody
     """


    return (await asyncio_detailed(
        client=client,
actor=actor,
payment_id=payment_id,
limit=limit,
cursor=cursor,

    )).parsed
