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





T = TypeVar("T", bound="AccountOut")



@_attrs_define
class AccountOut:
    """ One account, as this node uses it.

        Attributes:
            disabled (bool):
            id (str): The provider's id for it (`acct_…`, a merchant account code, an app id).
            origin (str): `file` (finality.toml) or `stored` (added at run time).
            provider (str):
            ready (bool): Whether this node could set it up (its secrets readable); if not, `error` says why.
            webhook_secret_envs (list[str]):
            weight (int):
            api_key_env (None | str | Unset): Names of the environment variables (or files) holding its secrets.
            app_auth_token_env (None | str | Unset): Alipay: the variable (or file) holding the merchant's app_auth_token.
            error (None | str | Unset):
            paused_reason (None | str | Unset):
            paused_until (None | str | Unset): While its calls are paused (a 401, a rate limit): until when and why.
            rate_limit (None | RateLimitIo | Unset):
            seller_id (None | str | Unset): Alipay: the merchant's own seller_id, checked on its trades.
     """

    disabled: bool
    id: str
    origin: str
    provider: str
    ready: bool
    webhook_secret_envs: list[str]
    weight: int
    api_key_env: None | str | Unset = UNSET
    app_auth_token_env: None | str | Unset = UNSET
    error: None | str | Unset = UNSET
    paused_reason: None | str | Unset = UNSET
    paused_until: None | str | Unset = UNSET
    rate_limit: None | RateLimitIo | Unset = UNSET
    seller_id: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.rate_limit_io import RateLimitIo # noqa: PLC0415
        disabled = self.disabled

        id = self.id

        origin = self.origin

        provider = self.provider

        ready = self.ready

        webhook_secret_envs = self.webhook_secret_envs



        weight = self.weight

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

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        paused_reason: None | str | Unset
        if isinstance(self.paused_reason, Unset):
            paused_reason = UNSET
        else:
            paused_reason = self.paused_reason

        paused_until: None | str | Unset
        if isinstance(self.paused_until, Unset):
            paused_until = UNSET
        else:
            paused_until = self.paused_until

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


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "disabled": disabled,
            "id": id,
            "origin": origin,
            "provider": provider,
            "ready": ready,
            "webhook_secret_envs": webhook_secret_envs,
            "weight": weight,
        })
        if api_key_env is not UNSET:
            field_dict["api_key_env"] = api_key_env
        if app_auth_token_env is not UNSET:
            field_dict["app_auth_token_env"] = app_auth_token_env
        if error is not UNSET:
            field_dict["error"] = error
        if paused_reason is not UNSET:
            field_dict["paused_reason"] = paused_reason
        if paused_until is not UNSET:
            field_dict["paused_until"] = paused_until
        if rate_limit is not UNSET:
            field_dict["rate_limit"] = rate_limit
        if seller_id is not UNSET:
            field_dict["seller_id"] = seller_id

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.rate_limit_io import RateLimitIo # noqa: PLC0415
        d = dict(src_dict)
        disabled = d.pop("disabled")

        id = d.pop("id")

        origin = d.pop("origin")

        provider = d.pop("provider")

        ready = d.pop("ready")

        webhook_secret_envs = cast(list[str], d.pop("webhook_secret_envs"))


        weight = d.pop("weight")

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


        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_paused_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paused_reason = _parse_paused_reason(d.pop("paused_reason", UNSET))


        def _parse_paused_until(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paused_until = _parse_paused_until(d.pop("paused_until", UNSET))


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


        account_out = cls(
            disabled=disabled,
            id=id,
            origin=origin,
            provider=provider,
            ready=ready,
            webhook_secret_envs=webhook_secret_envs,
            weight=weight,
            api_key_env=api_key_env,
            app_auth_token_env=app_auth_token_env,
            error=error,
            paused_reason=paused_reason,
            paused_until=paused_until,
            rate_limit=rate_limit,
            seller_id=seller_id,
        )

        return account_out

