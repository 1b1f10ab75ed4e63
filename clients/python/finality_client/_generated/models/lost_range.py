from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="LostRange")



@_attrs_define
class LostRange:
    """ Feed positions after `after`, up to and including `through`.

        Attributes:
            after (int):
            through (int):
     """

    after: int
    through: int





    def to_dict(self) -> dict[str, Any]:
        after = self.after

        through = self.through


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "after": after,
            "through": through,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        after = d.pop("after")

        through = d.pop("through")

        lost_range = cls(
            after=after,
            through=through,
        )

        return lost_range

