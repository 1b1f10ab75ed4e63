from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.recon_run_out import ReconRunOut





T = TypeVar("T", bound="ReconRunsOut")



@_attrs_define
class ReconRunsOut:
    """ The newest imports.

        Attributes:
            runs (list[ReconRunOut]):
     """

    runs: list[ReconRunOut]





    def to_dict(self) -> dict[str, Any]:
        from ..models.recon_run_out import ReconRunOut # noqa: PLC0415
        runs = []
        for runs_item_data in self.runs:
            runs_item = runs_item_data.to_dict()
            runs.append(runs_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "runs": runs,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.recon_run_out import ReconRunOut # noqa: PLC0415
        d = dict(src_dict)
        runs = []
        _runs = d.pop("runs")
        for runs_item_data in (_runs):
            runs_item = ReconRunOut.from_dict(runs_item_data)



            runs.append(runs_item)


        recon_runs_out = cls(
            runs=runs,
        )

        return recon_runs_out

