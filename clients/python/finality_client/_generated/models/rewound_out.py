from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RewoundOut")



@_attrs_define
class RewoundOut:
    """ What a rewind did.

        Attributes:
            destination (str):
            from_seq (int):
            replays (int): Events that will be sent again, in feed order.
            to_seq (int):
     """

    destination: str
    from_seq: int
    replays: int
    to_seq: int





    def to_dict(self) -> dict[str, Any]:
        destination = self.destination

        from_seq = self.from_seq

        replays = self.replays

        to_seq = self.to_seq


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "destination": destination,
            "from_seq": from_seq,
            "replays": replays,
            "to_seq": to_seq,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        destination = d.pop("destination")

        from_seq = d.pop("from_seq")

        replays = d.pop("replays")

        to_seq = d.pop("to_seq")

        rewound_out = cls(
            destination=destination,
            from_seq=from_seq,
            replays=replays,
            to_seq=to_seq,
        )

        return rewound_out

