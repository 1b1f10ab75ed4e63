from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="DestinationOut")



@_attrs_define
class DestinationOut:
    """ One push destination.

        Attributes:
            attempts (int): Failed tries of the next event.
            backlog (int): Events waiting (the feed head minus `delivered_seq`; type filters aside).
            delivered_seq (int): Every event at or below this feed position was delivered.
            name (str): `http:<name>`, `nats`, `rabbitmq` or `redis`.
            failing_since (None | str | Unset):
            last_error (None | str | Unset):
            next_attempt_at (None | str | Unset):
            paused_at (None | str | Unset): When an admin paused it: no attempts and no alert until resumed.
            paused_by (None | str | Unset):
     """

    attempts: int
    backlog: int
    delivered_seq: int
    name: str
    failing_since: None | str | Unset = UNSET
    last_error: None | str | Unset = UNSET
    next_attempt_at: None | str | Unset = UNSET
    paused_at: None | str | Unset = UNSET
    paused_by: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        backlog = self.backlog

        delivered_seq = self.delivered_seq

        name = self.name

        failing_since: None | str | Unset
        if isinstance(self.failing_since, Unset):
            failing_since = UNSET
        else:
            failing_since = self.failing_since

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        next_attempt_at: None | str | Unset
        if isinstance(self.next_attempt_at, Unset):
            next_attempt_at = UNSET
        else:
            next_attempt_at = self.next_attempt_at

        paused_at: None | str | Unset
        if isinstance(self.paused_at, Unset):
            paused_at = UNSET
        else:
            paused_at = self.paused_at

        paused_by: None | str | Unset
        if isinstance(self.paused_by, Unset):
            paused_by = UNSET
        else:
            paused_by = self.paused_by


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "attempts": attempts,
            "backlog": backlog,
            "delivered_seq": delivered_seq,
            "name": name,
        })
        if failing_since is not UNSET:
            field_dict["failing_since"] = failing_since
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if next_attempt_at is not UNSET:
            field_dict["next_attempt_at"] = next_attempt_at
        if paused_at is not UNSET:
            field_dict["paused_at"] = paused_at
        if paused_by is not UNSET:
            field_dict["paused_by"] = paused_by

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        backlog = d.pop("backlog")

        delivered_seq = d.pop("delivered_seq")

        name = d.pop("name")

        def _parse_failing_since(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        failing_since = _parse_failing_since(d.pop("failing_since", UNSET))


        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))


        def _parse_next_attempt_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_attempt_at = _parse_next_attempt_at(d.pop("next_attempt_at", UNSET))


        def _parse_paused_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paused_at = _parse_paused_at(d.pop("paused_at", UNSET))


        def _parse_paused_by(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        paused_by = _parse_paused_by(d.pop("paused_by", UNSET))


        destination_out = cls(
            attempts=attempts,
            backlog=backlog,
            delivered_seq=delivered_seq,
            name=name,
            failing_since=failing_since,
            last_error=last_error,
            next_attempt_at=next_attempt_at,
            paused_at=paused_at,
            paused_by=paused_by,
        )

        return destination_out

