from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.provider_stats import ProviderStats





T = TypeVar("T", bound="StatsOut")



@_attrs_define
class StatsOut:
    """ Per-provider figures over a window.

        Attributes:
            providers (list[ProviderStats]):
            since (int): The window's start, milliseconds since the epoch.
            window_s (int):
     """

    providers: list[ProviderStats]
    since: int
    window_s: int





    def to_dict(self) -> dict[str, Any]:
        from ..models.provider_stats import ProviderStats # noqa: PLC0415
        providers = []
        for providers_item_data in self.providers:
            providers_item = providers_item_data.to_dict()
            providers.append(providers_item)



        since = self.since

        window_s = self.window_s


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "providers": providers,
            "since": since,
            "window_s": window_s,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.provider_stats import ProviderStats # noqa: PLC0415
        d = dict(src_dict)
        providers = []
        _providers = d.pop("providers")
        for providers_item_data in (_providers):
            providers_item = ProviderStats.from_dict(providers_item_data)



            providers.append(providers_item)


        since = d.pop("since")

        window_s = d.pop("window_s")

        stats_out = cls(
            providers=providers,
            since=since,
            window_s=window_s,
        )

        return stats_out

