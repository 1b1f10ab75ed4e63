from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RedeliverIn")



@_attrs_define
class RedeliverIn:
    """ 
        Attributes:
            event_id (str): The event's `id`.
     """

    event_id: str





    def to_dict(self) -> dict[str, Any]:
        event_id = self.event_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "event_id": event_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        event_id = d.pop("event_id")

        redeliver_in = cls(
            event_id=event_id,
        )

        return redeliver_in

