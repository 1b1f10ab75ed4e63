from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.payment_page import PaymentPage
from ...models.status import Status
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    status: Status | Unset = UNSET,
    provider: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["provider"] = provider

    params["limit"] = limit

    params["cursor"] = cursor


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/payments",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | PaymentPage | None:
    if response.status_code == 200:
        response_200 = PaymentPage.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | PaymentPage]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: Status | Unset = UNSET,
    provider: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[ErrorBody | PaymentPage]:
    """ Payments in id order, filtered by status and provider.

    Args:
        status (Status | Unset): The canonical status of a payment, refund or payout. Provider-
            specific
            vocabularies are mapped onto these by the provider adapters.
        provider (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PaymentPage]
     """


    kwargs = _get_kwargs(
        status=status,
provider=provider,
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
    status: Status | Unset = UNSET,
    provider: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> ErrorBody | PaymentPage | None:
    """ Payments in id order, filtered by status and provider.

    Args:
        status (Status | Unset): The canonical status of a payment, refund or payout. Provider-
            specific
            vocabularies are mapped onto these by the provider adapters.
        provider (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PaymentPage
     """


    return sync_detailed(
        client=client,
status=status,
provider=provider,
limit=limit,
cursor=cursor,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    status: Status | Unset = UNSET,
    provider: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> Response[ErrorBody | PaymentPage]:
    """ Payments in id order, filtered by status and provider.

    Args:
        status (Status | Unset): The canonical status of a payment, refund or payout. Provider-
            specific
            vocabularies are mapped onto these by the provider adapters.
        provider (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PaymentPage]
     """


    kwargs = _get_kwargs(
        status=status,
provider=provider,
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
    status: Status | Unset = UNSET,
    provider: str | Unset = UNSET,
    limit: int | Unset = UNSET,
    cursor: str | Unset = UNSET,

) -> ErrorBody | PaymentPage | None:
    """ Payments in id order, filtered by status and provider.

    Args:
        status (Status | Unset): The canonical status of a payment, refund or payout. Provider-
            specific
            vocabularies are mapped onto these by the provider adapters.
        provider (str | Unset):
        limit (int | Unset):
        cursor (str | Unset): A list's position: pass the `next_cursor` of one page as `cursor` to
            get
            the next; omit it for the first page. Opaque: do not build one.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PaymentPage
     """


    return (await asyncio_detailed(
        client=client,
status=status,
provider=provider,
limit=limit,
cursor=cursor,

    )).parsed
