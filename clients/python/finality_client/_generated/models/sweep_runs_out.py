from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.sweep_run_out import SweepRunOut





T = TypeVar("T", bound="SweepRunsOut")



@_attrs_define
class SweepRunsOut:
    """ The newest runs.

        Attributes:
            runs (list[SweepRunOut]):
     """

    runs: list[SweepRunOut]





    def to_dict(self) -> dict[str, Any]:
        from ..models.sweep_run_out import SweepRunOut # noqa: PLC0415
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
        from ..models.sweep_run_out import SweepRunOut # noqa: PLC0415
        d = dict(src_dict)
        runs = []
        _runs = d.pop("runs")
        for runs_item_data in (_runs):
            runs_item = SweepRunOut.from_dict(runs_item_data)



            runs.append(runs_item)


        sweep_runs_out = cls(
            runs=runs,
        )

        return sweep_runs_out

