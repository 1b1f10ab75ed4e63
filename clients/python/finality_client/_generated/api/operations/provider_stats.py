from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.stats_out import StatsOut
from ...types import UNSET, Unset
from typing import cast



def _get_kwargs(
    *,
    window: str | Unset = UNSET,
    by: str | Unset = UNSET,

) -> dict[str, Any]:
    

    

    params: dict[str, Any] = {}

    params["window"] = window

    params["by"] = by


    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}


    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/stats/providers",
        "params": params,
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | StatsOut | None:
    if response.status_code == 200:
        response_200 = StatsOut.from_dict(response.json())



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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | StatsOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient | Client,
    window: str | Unset = UNSET,
    by: str | Unset = UNSET,

) -> Response[ErrorBody | StatsOut]:
    """ Queries until final, time to final, how final statuses arrived, what
    is open or in review, and error classes, per provider or per account.

    Args:
        window (str | Unset):
        by (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | StatsOut]
     """


    kwargs = _get_kwargs(
        window=window,
by=by,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    *,
    client: AuthenticatedClient | Client,
    window: str | Unset = UNSET,
    by: str | Unset = UNSET,

) -> ErrorBody | StatsOut | None:
    """ Queries until final, time to final, how final statuses arrived, what
    is open or in review, and error classes, per provider or per account.

    Args:
        window (str | Unset):
        by (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | StatsOut
     """


    return sync_detailed(
        client=client,
window=window,
by=by,

    ).parsed

async def asyncio_detailed(
    *,
    client: AuthenticatedClient | Client,
    window: str | Unset = UNSET,
    by: str | Unset = UNSET,

) -> Response[ErrorBody | StatsOut]:
    """ Queries until final, time to final, how final statuses arrived, what
    is open or in review, and error classes, per provider or per account.

    Args:
        window (str | Unset):
        by (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | StatsOut]
     """


    kwargs = _get_kwargs(
        window=window,
by=by,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    *,
    client: AuthenticatedClient | Client,
    window: str | Unset = UNSET,
    by: str | Unset = UNSET,

) -> ErrorBody | StatsOut | None:
    """ Queries until final, time to final, how final statuses arrived, what
    is open or in review, and error classes, per provider or per account.

    Args:
        window (str | Unset):
        by (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | StatsOut
     """


    return (await asyncio_detailed(
        client=client,
window=window,
by=by,

    )).parsed
