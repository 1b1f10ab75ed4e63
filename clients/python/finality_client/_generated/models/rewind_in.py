from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="RewindIn")



@_attrs_define
class RewindIn:
    """ Exactly one of `to_seq` and `to_time`.

        Attributes:
            to_seq (int | None | Unset): Send again every event after this feed position.
            to_time (None | str | Unset): Send again every event from the first that occurred at or after
                this time (RFC 3339).
     """

    to_seq: int | None | Unset = UNSET
    to_time: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        to_seq: int | None | Unset
        if isinstance(self.to_seq, Unset):
            to_seq = UNSET
        else:
            to_seq = self.to_seq

        to_time: None | str | Unset
        if isinstance(self.to_time, Unset):
            to_time = UNSET
        else:
            to_time = self.to_time


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if to_seq is not UNSET:
            field_dict["to_seq"] = to_seq
        if to_time is not UNSET:
            field_dict["to_time"] = to_time

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_to_seq(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        to_seq = _parse_to_seq(d.pop("to_seq", UNSET))


        def _parse_to_time(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        to_time = _parse_to_time(d.pop("to_time", UNSET))


        rewind_in = cls(
            to_seq=to_seq,
            to_time=to_time,
        )

        return rewind_in

