from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RedeliveryOut")



@_attrs_define
class RedeliveryOut:
    """ One redelivery asked for.

        Attributes:
            destination (str):
            event_id (str):
            id (int):
            requested_at (str):
            requested_by (str):
            done_at (None | str | Unset):
            outcome (None | str | Unset): `delivered`, or why not; `null` while waiting.
     """

    destination: str
    event_id: str
    id: int
    requested_at: str
    requested_by: str
    done_at: None | str | Unset = UNSET
    outcome: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        destination = self.destination

        event_id = self.event_id

        id = self.id

        requested_at = self.requested_at

        requested_by = self.requested_by

        done_at: None | str | Unset
        if isinstance(self.done_at, Unset):
            done_at = UNSET
        else:
            done_at = self.done_at

        outcome: None | str | Unset
        if isinstance(self.outcome, Unset):
            outcome = UNSET
        else:
            outcome = self.outcome


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "destination": destination,
            "event_id": event_id,
            "id": id,
            "requested_at": requested_at,
            "requested_by": requested_by,
        })
        if done_at is not UNSET:
            field_dict["done_at"] = done_at
        if outcome is not UNSET:
            field_dict["outcome"] = outcome

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        destination = d.pop("destination")

        event_id = d.pop("event_id")

        id = d.pop("id")

        requested_at = d.pop("requested_at")

        requested_by = d.pop("requested_by")

        def _parse_done_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        done_at = _parse_done_at(d.pop("done_at", UNSET))


        def _parse_outcome(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        outcome = _parse_outcome(d.pop("outcome", UNSET))


        redelivery_out = cls(
            destination=destination,
            event_id=event_id,
            id=id,
            requested_at=requested_at,
            requested_by=requested_by,
            done_at=done_at,
            outcome=outcome,
        )

        return redelivery_out

