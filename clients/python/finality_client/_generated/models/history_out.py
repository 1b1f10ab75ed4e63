from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.source import Source
from ..models.status import Status
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="HistoryOut")



@_attrs_define
class HistoryOut:
    """ One status change.

        Attributes:
            at (str):
            source (Source): Where a status change came from; recorded on every history row and event.
            to (Status): The canonical status of a payment, refund or payout. Provider-specific
                vocabularies are mapped onto these by the provider adapters.
            actor (None | str | Unset):
            event_id (None | str | Unset):
            from_ (None | Status | Unset):
            reason (None | str | Unset):
     """

    at: str
    source: Source
    to: Status
    actor: None | str | Unset = UNSET
    event_id: None | str | Unset = UNSET
    from_: None | Status | Unset = UNSET
    reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        at = self.at

        source = self.source.value

        to = self.to.value

        actor: None | str | Unset
        if isinstance(self.actor, Unset):
            actor = UNSET
        else:
            actor = self.actor

        event_id: None | str | Unset
        if isinstance(self.event_id, Unset):
            event_id = UNSET
        else:
            event_id = self.event_id

        from_: None | str | Unset
        if isinstance(self.from_, Unset):
            from_ = UNSET
        elif isinstance(self.from_, Status):
            from_ = self.from_.value
        else:
            from_ = self.from_

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "at": at,
            "source": source,
            "to": to,
        })
        if actor is not UNSET:
            field_dict["actor"] = actor
        if event_id is not UNSET:
            field_dict["event_id"] = event_id
        if from_ is not UNSET:
            field_dict["from"] = from_
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        at = d.pop("at")

        source = Source(d.pop("source"))




        to = Status(d.pop("to"))




        def _parse_actor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        actor = _parse_actor(d.pop("actor", UNSET))


        def _parse_event_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        event_id = _parse_event_id(d.pop("event_id", UNSET))


        def _parse_from_(data: object) -> None | Status | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                from_type_0 = Status(data)



                return from_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Status | Unset, data)

        from_ = _parse_from_(d.pop("from", UNSET))


        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        history_out = cls(
            at=at,
            source=source,
            to=to,
            actor=actor,
            event_id=event_id,
            from_=from_,
            reason=reason,
        )

        return history_out

