from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.recon_run_out_counts import ReconRunOutCounts





T = TypeVar("T", bound="ReconRunOut")



@_attrs_define
class ReconRunOut:
    """ One imported settlement report.

        Attributes:
            counts (ReconRunOutCounts): Lines by outcome: `matched`, `applied`, `reversed`,
                `amount_mismatch`, `contradiction`, `unknown_here`, `ignored`.
            file_name (str):
            id (int):
            lines (int):
            provider (str):
            sha256 (str): SHA-256 of the file: the same file imported again changes nothing.
            started_at (str):
            finished_at (None | str | Unset): `null` while running, or if the import died (it is redone from the
                start on the next import of the same file).
     """

    counts: ReconRunOutCounts
    file_name: str
    id: int
    lines: int
    provider: str
    sha256: str
    started_at: str
    finished_at: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.recon_run_out_counts import ReconRunOutCounts # noqa: PLC0415
        counts = self.counts.to_dict()

        file_name = self.file_name

        id = self.id

        lines = self.lines

        provider = self.provider

        sha256 = self.sha256

        started_at = self.started_at

        finished_at: None | str | Unset
        if isinstance(self.finished_at, Unset):
            finished_at = UNSET
        else:
            finished_at = self.finished_at


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "counts": counts,
            "file_name": file_name,
            "id": id,
            "lines": lines,
            "provider": provider,
            "sha256": sha256,
            "started_at": started_at,
        })
        if finished_at is not UNSET:
            field_dict["finished_at"] = finished_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.recon_run_out_counts import ReconRunOutCounts # noqa: PLC0415
        d = dict(src_dict)
        counts = ReconRunOutCounts.from_dict(d.pop("counts"))




        file_name = d.pop("file_name")

        id = d.pop("id")

        lines = d.pop("lines")

        provider = d.pop("provider")

        sha256 = d.pop("sha256")

        started_at = d.pop("started_at")

        def _parse_finished_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finished_at = _parse_finished_at(d.pop("finished_at", UNSET))


        recon_run_out = cls(
            counts=counts,
            file_name=file_name,
            id=id,
            lines=lines,
            provider=provider,
            sha256=sha256,
            started_at=started_at,
            finished_at=finished_at,
        )

        return recon_run_out

