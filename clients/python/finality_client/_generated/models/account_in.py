from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.rate_limit_io import RateLimitIo





T = TypeVar("T", bound="AccountIn")



@_attrs_define
class AccountIn:
    """ An account to add, or the new settings of one.

        Attributes:
            id (str): The provider's id for the account.
            provider (str): A configured provider's name.
            api_key_env (None | str | Unset): The environment variable (or absolute file path) holding its own API
                credentials; absent: the provider's, acting for the account where
                the provider documents how (Stripe-Account).
            app_auth_token_env (None | str | Unset): Alipay, an integrator acting for a merchant: the variable (or file)
                holding the merchant's `app_auth_token`.
            rate_limit (None | RateLimitIo | Unset):
            seller_id (None | str | Unset): Alipay: the merchant's own Alipay user id (`2088…`), checked on its
                trades; absent: not checked (never the provider's).
            webhook_secret_envs (list[str] | Unset): Variables (or files) holding its webhook secrets; absent: the
                provider's.
            weight (int | None | Unset): Its share of each claim round beside other accounts (1–1000, default 1).
     """

    id: str
    provider: str
    api_key_env: None | str | Unset = UNSET
    app_auth_token_env: None | str | Unset = UNSET
    rate_limit: None | RateLimitIo | Unset = UNSET
    seller_id: None | str | Unset = UNSET
    webhook_secret_envs: list[str] | Unset = UNSET
    weight: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit_io import RateLimitIo # noqa: PLC0415
        id = self.id

        provider = self.provider

        api_key_env: None | str | Unset
        if isinstance(self.api_key_env, Unset):
            api_key_env = UNSET
        else:
            api_key_env = self.api_key_env

        app_auth_token_env: None | str | Unset
        if isinstance(self.app_auth_token_env, Unset):
            app_auth_token_env = UNSET
        else:
            app_auth_token_env = self.app_auth_token_env

        rate_limit: dict[str, Any] | None | Unset
        if isinstance(self.rate_limit, Unset):
            rate_limit = UNSET
        elif isinstance(self.rate_limit, RateLimitIo):
            rate_limit = self.rate_limit.to_dict()
        else:
            rate_limit = self.rate_limit

        seller_id: None | str | Unset
        if isinstance(self.seller_id, Unset):
            seller_id = UNSET
        else:
            seller_id = self.seller_id

        webhook_secret_envs: list[str] | Unset = UNSET
        if not isinstance(self.webhook_secret_envs, Unset):
            webhook_secret_envs = self.webhook_secret_envs



        weight: int | None | Unset
        if isinstance(self.weight, Unset):
            weight = UNSET
        else:
            weight = self.weight


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "provider": provider,
        })
        if api_key_env is not UNSET:
            field_dict["api_key_env"] = api_key_env
        if app_auth_token_env is not UNSET:
            field_dict["app_auth_token_env"] = app_auth_token_env
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if seller_id is not UNSET:
            field_dict["seller_id"] = seller_id
        if webhook_secret_envs is not UNSET:
            field_dict["webhook_secret_envs"] = webhook_secret_envs
        if weight is not UNSET:
            field_dict["weight"] = weight

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.rate_limit_io import RateLimitIo # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        provider = d.pop("provider")

        def _parse_api_key_env(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        api_key_env = _parse_api_key_env(d.pop("api_key_env", UNSET))


        def _parse_app_auth_token_env(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        app_auth_token_env = _parse_app_auth_token_env(d.pop("app_auth_token_env", UNSET))


        def _parse_rate_limit(data: object) -> None | RateLimitIo | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                rate_limit_type_0 = RateLimitIo.from_dict(data)



                return rate_limit_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | RateLimitIo | Unset, data)

        rate_limit = _parse_rate_limit(d.pop("rate_limit", UNSET))


        def _parse_seller_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        seller_id = _parse_seller_id(d.pop("seller_id", UNSET))


        webhook_secret_envs = cast(list[str], d.pop("webhook_secret_envs", UNSET))


        def _parse_weight(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        weight = _parse_weight(d.pop("weight", UNSET))


        account_in = cls(
            id=id,
            provider=provider,
            api_key_env=api_key_env,
            app_auth_token_env=app_auth_token_env,
            rate_limit=rate_limit,
            seller_id=seller_id,
            webhook_secret_envs=webhook_secret_envs,
            weight=weight,
        )

        return account_in

