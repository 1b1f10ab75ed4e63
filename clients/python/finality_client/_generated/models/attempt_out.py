from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="AttemptOut")



@_attrs_define
class AttemptOut:
    """ One status query to the provider.

        Attributes:
            id (int):
            latency_ms (int):
            outcome (str):
            started_at (str):
            worker (str):
            error (None | str | Unset):
            error_class (None | str | Unset):
            provider_status (None | str | Unset):
     """

    id: int
    latency_ms: int
    outcome: str
    started_at: str
    worker: str
    error: None | str | Unset = UNSET
    error_class: None | str | Unset = UNSET
    provider_status: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        id = self.id

        latency_ms = self.latency_ms

        outcome = self.outcome

        started_at = self.started_at

        worker = self.worker

        error: None | str | Unset
        if isinstance(self.error, Unset):
            error = UNSET
        else:
            error = self.error

        error_class: None | str | Unset
        if isinstance(self.error_class, Unset):
            error_class = UNSET
        else:
            error_class = self.error_class

        provider_status: None | str | Unset
        if isinstance(self.provider_status, Unset):
            provider_status = UNSET
        else:
            provider_status = self.provider_status


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "latency_ms": latency_ms,
            "outcome": outcome,
            "started_at": started_at,
            "worker": worker,
        })
        if error is not UNSET:
            field_dict["error"] = error
        if error_class is not UNSET:
            field_dict["error_class"] = error_class
        if provider_status is not UNSET:
            field_dict["provider_status"] = provider_status

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        id = d.pop("id")

        latency_ms = d.pop("latency_ms")

        outcome = d.pop("outcome")

        started_at = d.pop("started_at")

        worker = d.pop("worker")

        def _parse_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error = _parse_error(d.pop("error", UNSET))


        def _parse_error_class(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        error_class = _parse_error_class(d.pop("error_class", UNSET))


        def _parse_provider_status(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_status = _parse_provider_status(d.pop("provider_status", UNSET))


        attempt_out = cls(
            id=id,
            latency_ms=latency_ms,
            outcome=outcome,
            started_at=started_at,
            worker=worker,
            error=error,
            error_class=error_class,
            provider_status=provider_status,
        )

        return attempt_out

