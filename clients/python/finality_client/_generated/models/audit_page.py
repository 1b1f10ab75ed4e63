from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.audit_out import AuditOut





T = TypeVar("T", bound="AuditPage")



@_attrs_define
class AuditPage:
    """ A page of the audit trail, newest first.

        Attributes:
            records (list[AuditOut]):
            next_cursor (None | str | Unset): Pass as `cursor` for the next (older) page; `null` on the last.
     """

    records: list[AuditOut]
    next_cursor: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.audit_out import AuditOut # noqa: PLC0415
        records = []
        for records_item_data in self.records:
            records_item = records_item_data.to_dict()
            records.append(records_item)



        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "records": records,
        })
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.audit_out import AuditOut # noqa: PLC0415
        d = dict(src_dict)
        records = []
        _records = d.pop("records")
        for records_item_data in (_records):
            records_item = AuditOut.from_dict(records_item_data)



            records.append(records_item)


        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))


        audit_page = cls(
            records=records,
            next_cursor=next_cursor,
        )

        return audit_page

