from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.payment_in import PaymentIn
from ...models.payment_out import PaymentOut
from typing import cast



def _get_kwargs(
    *,
    body: PaymentIn,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/payments",
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | PaymentOut | None:
    if response.status_code == 200:
        response_200 = PaymentOut.from_dict(response.json())



        return response_200

    if response.status_code == 201:
        response_201 = PaymentOut.from_dict(response.json())



        return response_201

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())



        return response_403

    if response.status_code == 409:
        response_409 = ErrorBody.from_dict(response.json())



        return response_409

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | PaymentOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PaymentIn,

) -> Response[ErrorBody | PaymentOut]:
    """ Register a payment to drive to its final status. Idempotent on `id`:
    the same body again answers 200 with the stored payment.

    Args:
        body (PaymentIn): `POST /v1/payments` body. Fields are optional here so that a missing one
            is reported by name, with the same shape as every other field error.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PaymentOut]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    body: PaymentIn,

) -> ErrorBody | PaymentOut | None:
    """ Register a payment to drive to its final status. Idempotent on `id`:
    the same body again answers 200 with the stored payment.

    Args:
        body (PaymentIn): `POST /v1/payments` body. Fields are optional here so that a missing one
            is reported by name, with the same shape as every other field error.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PaymentOut
     """


    return sync_detailed(
        client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    body: PaymentIn,

) -> Response[ErrorBody | PaymentOut]:
    """ Register a payment to drive to its final status. Idempotent on `id`:
    the same body again answers 200 with the stored payment.

    Args:
        body (PaymentIn): `POST /v1/payments` body. Fields are optional here so that a missing one
            is reported by name, with the same shape as every other field error.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | PaymentOut]
     """


    kwargs = _get_kwargs(
        body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    body: PaymentIn,

) -> ErrorBody | PaymentOut | None:
    """ Register a payment to drive to its final status. Idempotent on `id`:
    the same body again answers 200 with the stored payment.

    Args:
        body (PaymentIn): `POST /v1/payments` body. Fields are optional here so that a missing one
            is reported by name, with the same shape as every other field error.

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | PaymentOut
     """


    return (await asyncio_detailed(
        client=client,
body=body,

    )).parsed
