from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.import_out_counts import ImportOutCounts





T = TypeVar("T", bound="ImportOut")



@_attrs_define
class ImportOut:
    """ What an import did.

        Attributes:
            already_imported (bool): The same file had been imported before: nothing was done.
            counts (ImportOutCounts):
            lines (int):
            run_id (int):
     """

    already_imported: bool
    counts: ImportOutCounts
    lines: int
    run_id: int





    def to_dict(self) -> dict[str, Any]:
        from ..models.import_out_counts import ImportOutCounts # noqa: PLC0415
        already_imported = self.already_imported

        counts = self.counts.to_dict()

        lines = self.lines

        run_id = self.run_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "already_imported": already_imported,
            "counts": counts,
            "lines": lines,
            "run_id": run_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.import_out_counts import ImportOutCounts # noqa: PLC0415
        d = dict(src_dict)
        already_imported = d.pop("already_imported")

        counts = ImportOutCounts.from_dict(d.pop("counts"))




        lines = d.pop("lines")

        run_id = d.pop("run_id")

        import_out = cls(
            already_imported=already_imported,
            counts=counts,
            lines=lines,
            run_id=run_id,
        )

        return import_out

