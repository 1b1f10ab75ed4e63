from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.status import Status
from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ResolveIn")



@_attrs_define
class ResolveIn:
    """ 
        Attributes:
            reason (str): Why (kept on the history row).
            status (Status): The canonical status of a payment, refund or payout. Provider-specific
                vocabularies are mapped onto these by the provider adapters.
            actor (None | str | Unset): Only with the one shared token, which cannot tell people apart;
                with named tokens the actor is the token's name.
            note (None | str | Unset): Free text kept in the audit record beside the reason.
     """

    reason: str
    status: Status
    actor: None | str | Unset = UNSET
    note: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        status = self.status.value

        actor: None | str | Unset
        if isinstance(self.actor, Unset):
            actor = UNSET
        else:
            actor = self.actor

        note: None | str | Unset
        if isinstance(self.note, Unset):
            note = UNSET
        else:
            note = self.note


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "reason": reason,
            "status": status,
        })
        if actor is not UNSET:
            field_dict["actor"] = actor
        if note is not UNSET:
            field_dict["note"] = note

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        status = Status(d.pop("status"))




        def _parse_actor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        actor = _parse_actor(d.pop("actor", UNSET))


        def _parse_note(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        note = _parse_note(d.pop("note", UNSET))


        resolve_in = cls(
            reason=reason,
            status=status,
            actor=actor,
            note=note,
        )

        return resolve_in

