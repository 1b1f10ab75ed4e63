from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.account_out import AccountOut
from ...models.error_body import ErrorBody
from typing import cast



def _get_kwargs(
    provider: str,
    id: str,

) -> dict[str, Any]:
    

    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/accounts/{provider}/{id}/disable".format(provider=quote(str(provider), safe=""),id=quote(str(id), safe=""),),
    }


    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> AccountOut | ErrorBody | None:
    if response.status_code == 200:
        response_200 = AccountOut.from_dict(response.json())



        return response_200

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

    if response.status_code == 429:
        response_429 = ErrorBody.from_dict(response.json())



        return response_429

    if client.raise_on_unexpected_status:
        raise errors.UnexpectedStatus(response.status_code, response.content)
    else:
        return None


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[AccountOut | ErrorBody]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    provider: str,
    id: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[AccountOut | ErrorBody]:
    """ Disable an account: its payments wait (nothing is polled as it) and its
    webhooks are refused, until it is added again (admin; audited).

    Args:
        provider (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AccountOut | ErrorBody]
     """


    kwargs = _get_kwargs(
        provider=provider,
id=id,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    provider: str,
    id: str,
    *,
    client: AuthenticatedClient | Client,

) -> AccountOut | ErrorBody | None:
    """ Disable an account: its payments wait (nothing is polled as it) and its
    webhooks are refused, until it is added again (admin; audited).

    Args:
        provider (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AccountOut | ErrorBody
     """


    return sync_detailed(
        provider=provider,
id=id,
client=client,

    ).parsed

async def asyncio_detailed(
    provider: str,
    id: str,
    *,
    client: AuthenticatedClient | Client,

) -> Response[AccountOut | ErrorBody]:
    """ Disable an account: its payments wait (nothing is polled as it) and its
    webhooks are refused, until it is added again (admin; audited).

    Args:
        provider (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[AccountOut | ErrorBody]
     """


    kwargs = _get_kwargs(
        provider=provider,
id=id,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    provider: str,
    id: str,
    *,
    client: AuthenticatedClient | Client,

) -> AccountOut | ErrorBody | None:
    """ Disable an account: its payments wait (nothing is polled as it) and its
    webhooks are refused, until it is added again (admin; audited).

    Args:
        provider (str):
        id (str):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        AccountOut | ErrorBody
     """


    return (await asyncio_detailed(
        provider=provider,
id=id,
client=client,

    )).parsed
