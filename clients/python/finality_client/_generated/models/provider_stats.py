from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.provider_stats_errors import ProviderStatsErrors
  from ..models.provider_stats_final_by import ProviderStatsFinalBy
  from ..models.quantiles import Quantiles





T = TypeVar("T", bound="ProviderStats")



@_attrs_define
class ProviderStats:
    """ One provider's figures.

        Attributes:
            errors (ProviderStatsErrors): Failed provider calls of these payments, by error class.
            final_by (ProviderStatsFinalBy): Final ones, by how their final status arrived (`webhook`,
                `status_query`, `sweep`, `manual`).
            in_review (int):
            open_ (int):
            payments (int): Payments registered in the window.
            provider (str):
            queries_until_final (Quantiles): p50 / p90 / p99 / max of a set of values (nearest rank); all `None`
                when the set is empty.
            time_to_final_s (Quantiles): p50 / p90 / p99 / max of a set of values (nearest rank); all `None`
                when the set is empty.
            account (None | str | Unset): With figures per account: the account (`null`: the provider's own
                payments); absent with figures per provider.
     """

    errors: ProviderStatsErrors
    final_by: ProviderStatsFinalBy
    in_review: int
    open_: int
    payments: int
    provider: str
    queries_until_final: Quantiles
    time_to_final_s: Quantiles
    account: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.provider_stats_errors import ProviderStatsErrors # noqa: PLC0415
        from ..models.provider_stats_final_by import ProviderStatsFinalBy # noqa: PLC0415
        from ..models.quantiles import Quantiles # noqa: PLC0415
        errors = self.errors.to_dict()

        final_by = self.final_by.to_dict()

        in_review = self.in_review

        open_ = self.open_

        payments = self.payments

        provider = self.provider

        queries_until_final = self.queries_until_final.to_dict()

        time_to_final_s = self.time_to_final_s.to_dict()

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "errors": errors,
            "final_by": final_by,
            "in_review": in_review,
            "open": open_,
            "payments": payments,
            "provider": provider,
            "queries_until_final": queries_until_final,
            "time_to_final_s": time_to_final_s,
        })
        if account is not UNSET:
            field_dict["account"] = account

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.provider_stats_errors import ProviderStatsErrors # noqa: PLC0415
        from ..models.provider_stats_final_by import ProviderStatsFinalBy # noqa: PLC0415
        from ..models.quantiles import Quantiles # noqa: PLC0415
        d = dict(src_dict)
        errors = ProviderStatsErrors.from_dict(d.pop("errors"))




        final_by = ProviderStatsFinalBy.from_dict(d.pop("final_by"))




        in_review = d.pop("in_review")

        open_ = d.pop("open")

        payments = d.pop("payments")

        provider = d.pop("provider")

        queries_until_final = Quantiles.from_dict(d.pop("queries_until_final"))




        time_to_final_s = Quantiles.from_dict(d.pop("time_to_final_s"))




        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))


        provider_stats = cls(
            errors=errors,
            final_by=final_by,
            in_review=in_review,
            open_=open_,
            payments=payments,
            provider=provider,
            queries_until_final=queries_until_final,
            time_to_final_s=time_to_final_s,
            account=account,
        )

        return provider_stats

