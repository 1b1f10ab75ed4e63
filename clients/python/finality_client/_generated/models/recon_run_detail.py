from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.recon_line_out import ReconLineOut
  from ..models.recon_run_out import ReconRunOut





T = TypeVar("T", bound="ReconRunDetail")



@_attrs_define
class ReconRunDetail:
    """ One import with the lines that did not simply match (the first 1,000).

        Attributes:
            lines (list[ReconLineOut]):
            run (ReconRunOut): One imported settlement report.
     """

    lines: list[ReconLineOut]
    run: ReconRunOut





    def to_dict(self) -> dict[str, Any]:
        from ..models.recon_line_out import ReconLineOut # noqa: PLC0415
        from ..models.recon_run_out import ReconRunOut # noqa: PLC0415
        lines = []
        for lines_item_data in self.lines:
            lines_item = lines_item_data.to_dict()
            lines.append(lines_item)



        run = self.run.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "lines": lines,
            "run": run,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.recon_line_out import ReconLineOut # noqa: PLC0415
        from ..models.recon_run_out import ReconRunOut # noqa: PLC0415
        d = dict(src_dict)
        lines = []
        _lines = d.pop("lines")
        for lines_item_data in (_lines):
            lines_item = ReconLineOut.from_dict(lines_item_data)



            lines.append(lines_item)


        run = ReconRunOut.from_dict(d.pop("run"))




        recon_run_detail = cls(
            lines=lines,
            run=run,
        )

        return recon_run_detail

