from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...types import Response, UNSET
from ... import errors

from ...models.error_body import ErrorBody
from ...models.flag_out import FlagOut
from ...models.flag_resolve_in import FlagResolveIn
from typing import cast



def _get_kwargs(
    id: str,
    flag: int,
    *,
    body: FlagResolveIn,

) -> dict[str, Any]:
    headers: dict[str, Any] = {}


    

    

    _kwargs: dict[str, Any] = {
        "method": "post",
        "url": "/v1/payments/{id}/flags/{flag}/resolve".format(id=quote(str(id), safe=""),flag=quote(str(flag), safe=""),),
    }

    _kwargs["json"] = body.to_dict()

    headers["Content-Type"] = "application/json"

    _kwargs["headers"] = headers
    return _kwargs



def _parse_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> ErrorBody | FlagOut | None:
    if response.status_code == 200:
        response_200 = FlagOut.from_dict(response.json())



        return response_200

    if response.status_code == 400:
        response_400 = ErrorBody.from_dict(response.json())



        return response_400

    if response.status_code == 401:
        response_401 = ErrorBody.from_dict(response.json())



        return response_401

    if response.status_code == 403:
        response_403 = ErrorBody.from_dict(response.json())



        return response_403

    if response.status_code == 404:
        response_404 = ErrorBody.from_dict(response.json())



        return response_404

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


def _build_response(*, client: AuthenticatedClient | Client, response: httpx.Response) -> Response[ErrorBody | FlagOut]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    flag: int,
    *,
    client: AuthenticatedClient | Client,
    body: FlagResolveIn,

) -> Response[ErrorBody | FlagOut]:
    """ Close a flag by hand: who (the token's name) and why are kept on it and
    in the audit trail, in one transaction. A flag closed already (by a
    person or by the provider's later report) is answered as it is.

    Args:
        id (str):
        flag (int):
        body (FlagResolveIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | FlagOut]
     """


    kwargs = _get_kwargs(
        id=id,
flag=flag,
body=body,

    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)

def sync(
    id: str,
    flag: int,
    *,
    client: AuthenticatedClient | Client,
    body: FlagResolveIn,

) -> ErrorBody | FlagOut | None:
    """ Close a flag by hand: who (the token's name) and why are kept on it and
    in the audit trail, in one transaction. A flag closed already (by a
    person or by the provider's later report) is answered as it is.

    Args:
        id (str):
        flag (int):
        body (FlagResolveIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | FlagOut
     """


    return sync_detailed(
        id=id,
flag=flag,
client=client,
body=body,

    ).parsed

async def asyncio_detailed(
    id: str,
    flag: int,
    *,
    client: AuthenticatedClient | Client,
    body: FlagResolveIn,

) -> Response[ErrorBody | FlagOut]:
    """ Close a flag by hand: who (the token's name) and why are kept on it and
    in the audit trail, in one transaction. A flag closed already (by a
    person or by the provider's later report) is answered as it is.

    Args:
        id (str):
        flag (int):
        body (FlagResolveIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[ErrorBody | FlagOut]
     """


    kwargs = _get_kwargs(
        id=id,
flag=flag,
body=body,

    )

    response = await client.get_async_httpx_client().request(
        **kwargs
    )

    return _build_response(client=client, response=response)

async def asyncio(
    id: str,
    flag: int,
    *,
    client: AuthenticatedClient | Client,
    body: FlagResolveIn,

) -> ErrorBody | FlagOut | None:
    """ Close a flag by hand: who (the token's name) and why are kept on it and
    in the audit trail, in one transaction. A flag closed already (by a
    person or by the provider's later report) is answered as it is.

    Args:
        id (str):
        flag (int):
        body (FlagResolveIn):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        ErrorBody | FlagOut
     """


    return (await asyncio_detailed(
        id=id,
flag=flag,
client=client,
body=body,

    )).parsed
