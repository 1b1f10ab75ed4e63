from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.destination_out import DestinationOut
  from ..models.redelivery_out import RedeliveryOut





T = TypeVar("T", bound="DestinationsOut")



@_attrs_define
class DestinationsOut:
    """ The destinations, the feed's bounds and the newest redeliveries.

        Attributes:
            destinations (list[DestinationOut]):
            head (int): The last feed position given.
            redeliveries (list[RedeliveryOut]): The 20 newest, newest first.
            oldest_at (None | str | Unset):
            oldest_seq (int | None | Unset): The oldest event kept (`null`: none is), as far back as a rewind reaches.
     """

    destinations: list[DestinationOut]
    head: int
    redeliveries: list[RedeliveryOut]
    oldest_at: None | str | Unset = UNSET
    oldest_seq: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.destination_out import DestinationOut # noqa: PLC0415
        from ..models.redelivery_out import RedeliveryOut # noqa: PLC0415
        destinations = []
        for destinations_item_data in self.destinations:
            destinations_item = destinations_item_data.to_dict()
            destinations.append(destinations_item)



        head = self.head

        redeliveries = []
        for redeliveries_item_data in self.redeliveries:
            redeliveries_item = redeliveries_item_data.to_dict()
            redeliveries.append(redeliveries_item)



        oldest_at: None | str | Unset
        if isinstance(self.oldest_at, Unset):
            oldest_at = UNSET
        else:
            oldest_at = self.oldest_at

        oldest_seq: int | None | Unset
        if isinstance(self.oldest_seq, Unset):
            oldest_seq = UNSET
        else:
            oldest_seq = self.oldest_seq


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "destinations": destinations,
            "head": head,
            "redeliveries": redeliveries,
        })
        if oldest_at is not UNSET:
            field_dict["oldest_at"] = oldest_at
        if oldest_seq is not UNSET:
            field_dict["oldest_seq"] = oldest_seq

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.destination_out import DestinationOut # noqa: PLC0415
        from ..models.redelivery_out import RedeliveryOut # noqa: PLC0415
        d = dict(src_dict)
        destinations = []
        _destinations = d.pop("destinations")
        for destinations_item_data in (_destinations):
            destinations_item = DestinationOut.from_dict(destinations_item_data)



            destinations.append(destinations_item)


        head = d.pop("head")

        redeliveries = []
        _redeliveries = d.pop("redeliveries")
        for redeliveries_item_data in (_redeliveries):
            redeliveries_item = RedeliveryOut.from_dict(redeliveries_item_data)



            redeliveries.append(redeliveries_item)


        def _parse_oldest_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        oldest_at = _parse_oldest_at(d.pop("oldest_at", UNSET))


        def _parse_oldest_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        oldest_seq = _parse_oldest_seq(d.pop("oldest_seq", UNSET))


        destinations_out = cls(
            destinations=destinations,
            head=head,
            redeliveries=redeliveries,
            oldest_at=oldest_at,
            oldest_seq=oldest_seq,
        )

        return destinations_out

