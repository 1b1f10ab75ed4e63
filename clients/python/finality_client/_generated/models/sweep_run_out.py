from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.sweep_run_out_findings import SweepRunOutFindings





T = TypeVar("T", bound="SweepRunOut")



@_attrs_define
class SweepRunOut:
    """ One run of the sweep.

        Attributes:
            findings (SweepRunOutFindings): Findings by kind: `job_missing`, `job_of_final_payment`,
                `status_behind_provider`, `open_past_give_up`, `webhook_stuck`,
                `webhook_orphaned`.
            finished_at (str):
            holder (str): The node (engine worker id) that ran it.
            id (int):
            pass_complete (bool): The run reached the last payment: a pass over all of them ended.
            repaired (int): How many findings were repaired (orphaned webhooks are only reported).
            scanned (int): Payments read.
            started_at (str):
     """

    findings: SweepRunOutFindings
    finished_at: str
    holder: str
    id: int
    pass_complete: bool
    repaired: int
    scanned: int
    started_at: str





    def to_dict(self) -> dict[str, Any]:
        from ..models.sweep_run_out_findings import SweepRunOutFindings # noqa: PLC0415
        findings = self.findings.to_dict()

        finished_at = self.finished_at

        holder = self.holder

        id = self.id

        pass_complete = self.pass_complete

        repaired = self.repaired

        scanned = self.scanned

        started_at = self.started_at


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "findings": findings,
            "finished_at": finished_at,
            "holder": holder,
            "id": id,
            "pass_complete": pass_complete,
            "repaired": repaired,
            "scanned": scanned,
            "started_at": started_at,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.sweep_run_out_findings import SweepRunOutFindings # noqa: PLC0415
        d = dict(src_dict)
        findings = SweepRunOutFindings.from_dict(d.pop("findings"))




        finished_at = d.pop("finished_at")

        holder = d.pop("holder")

        id = d.pop("id")

        pass_complete = d.pop("pass_complete")

        repaired = d.pop("repaired")

        scanned = d.pop("scanned")

        started_at = d.pop("started_at")

        sweep_run_out = cls(
            findings=findings,
            finished_at=finished_at,
            holder=holder,
            id=id,
            pass_complete=pass_complete,
            repaired=repaired,
            scanned=scanned,
            started_at=started_at,
        )

        return sweep_run_out

