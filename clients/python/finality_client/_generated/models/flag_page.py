from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.flag_out import FlagOut





T = TypeVar("T", bound="FlagPage")



@_attrs_define
class FlagPage:
    """ A page of open flags.

        Attributes:
            flags (list[FlagOut]):
            next_after (int | None | Unset): Pass as `after` for the next page; `null` on the last.
     """

    flags: list[FlagOut]
    next_after: int | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.flag_out import FlagOut # noqa: PLC0415
        flags = []
        for flags_item_data in self.flags:
            flags_item = flags_item_data.to_dict()
            flags.append(flags_item)



        next_after: int | None | Unset
        if isinstance(self.next_after, Unset):
            next_after = UNSET
        else:
            next_after = self.next_after


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "flags": flags,
        })
        if next_after is not UNSET:
            field_dict["next_after"] = next_after

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.flag_out import FlagOut # noqa: PLC0415
        d = dict(src_dict)
        flags = []
        _flags = d.pop("flags")
        for flags_item_data in (_flags):
            flags_item = FlagOut.from_dict(flags_item_data)



            flags.append(flags_item)


        def _parse_next_after(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        next_after = _parse_next_after(d.pop("next_after", UNSET))


        flag_page = cls(
            flags=flags,
            next_after=next_after,
        )

        return flag_page

