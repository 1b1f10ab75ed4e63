from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="FlagResolveIn")



@_attrs_define
class FlagResolveIn:
    """ 
        Attributes:
            reason (str): What was done or checked (kept on the flag and in the audit trail).
            actor (None | str | Unset): Only with the one shared token; with named tokens the actor is the
                token's name.
     """

    reason: str
    actor: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        reason = self.reason

        actor: None | str | Unset
        if isinstance(self.actor, Unset):
            actor = UNSET
        else:
            actor = self.actor


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "reason": reason,
        })
        if actor is not UNSET:
            field_dict["actor"] = actor

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        reason = d.pop("reason")

        def _parse_actor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        actor = _parse_actor(d.pop("actor", UNSET))


        flag_resolve_in = cls(
            reason=reason,
            actor=actor,
        )

        return flag_resolve_in

