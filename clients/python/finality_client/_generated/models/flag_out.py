from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FlagOut")



@_attrs_define
class FlagOut:
    """ A fact about a final payment that needs a person.

        Attributes:
            id (int):
            opened_at (str):
            payment_id (str):
            reason (str): Why a person must look.
            closed_at (None | str | Unset): `null` while open.
            closed_by (None | str | Unset): The token's name of whoever resolved it, or `provider`.
            event_id (None | str | Unset): The provider's event that raised it.
            piece (None | str | Unset): The provider's sub-object it is about (`capture:8825408195409505`);
                a later report of it succeeding closes the flag by itself.
            provider_status (None | str | Unset):
            resolution (None | str | Unset):
     """

    id: int
    opened_at: str
    payment_id: str
    reason: str
    closed_at: None | str | Unset = UNSET
    closed_by: None | str | Unset = UNSET
    event_id: None | str | Unset = UNSET
    piece: None | str | Unset = UNSET
    provider_status: None | str | Unset = UNSET
    resolution: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        opened_at = self.opened_at

        payment_id = self.payment_id

        reason = self.reason

        closed_at: None | str | Unset
        if isinstance(self.closed_at, Unset):
            closed_at = UNSET
        else:
            closed_at = self.closed_at

        closed_by: None | str | Unset
        if isinstance(self.closed_by, Unset):
            closed_by = UNSET
        else:
            closed_by = self.closed_by

        event_id: None | str | Unset
        if isinstance(self.event_id, Unset):
            event_id = UNSET
        else:
            event_id = self.event_id

        piece: None | str | Unset
        if isinstance(self.piece, Unset):
            piece = UNSET
        else:
            piece = self.piece

        provider_status: None | str | Unset
        if isinstance(self.provider_status, Unset):
            provider_status = UNSET
        else:
            provider_status = self.provider_status

        resolution: None | str | Unset
        if isinstance(self.resolution, Unset):
            resolution = UNSET
        else:
            resolution = self.resolution


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "opened_at": opened_at,
            "payment_id": payment_id,
            "reason": reason,
        })
        if closed_at is not UNSET:
            field_dict["closed_at"] = closed_at
        if closed_by is not UNSET:
            field_dict["closed_by"] = closed_by
        if event_id is not UNSET:
            field_dict["event_id"] = event_id
        if piece is not UNSET:
            field_dict["piece"] = piece
        if provider_status is not UNSET:
            field_dict["provider_status"] = provider_status
        if resolution is not UNSET:
            field_dict["resolution"] = resolution

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        opened_at = d.pop("opened_at")

        payment_id = d.pop("payment_id")

        reason = d.pop("reason")

        def _parse_closed_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        closed_at = _parse_closed_at(d.pop("closed_at", UNSET))


        def _parse_closed_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        closed_by = _parse_closed_by(d.pop("closed_by", UNSET))


        def _parse_event_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_id = _parse_event_id(d.pop("event_id", UNSET))


        def _parse_piece(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        piece = _parse_piece(d.pop("piece", UNSET))


        def _parse_provider_status(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_status = _parse_provider_status(d.pop("provider_status", UNSET))


        def _parse_resolution(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        resolution = _parse_resolution(d.pop("resolution", UNSET))


        flag_out = cls(
            id=id,
            opened_at=opened_at,
            payment_id=payment_id,
            reason=reason,
            closed_at=closed_at,
            closed_by=closed_by,
            event_id=event_id,
            piece=piece,
            provider_status=provider_status,
            resolution=resolution,
        )

        return flag_out

