from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.audit_out_detail import AuditOutDetail





T = TypeVar("T", bound="AuditOut")



@_attrs_define
class AuditOut:
    """ One manual action.

        Attributes:
            action (str):
            actor (str): The name of the token that acted.
            at (str):
            detail (AuditOutDetail): What was asked (status, reason, note, …).
            id (int):
            outcome (str):
            role (str):
            payment_id (None | str | Unset):
            remote_addr (None | str | Unset):
     """

    action: str
    actor: str
    at: str
    detail: AuditOutDetail
    id: int
    outcome: str
    role: str
    payment_id: None | str | Unset = UNSET
    remote_addr: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.audit_out_detail import AuditOutDetail # noqa: PLC0415
        action = self.action

        actor = self.actor

        at = self.at

        detail = self.detail.to_dict()

        id = self.id

        outcome = self.outcome

        role = self.role

        payment_id: None | str | Unset
        if isinstance(self.payment_id, Unset):
            payment_id = UNSET
        else:
            payment_id = self.payment_id

        remote_addr: None | str | Unset
        if isinstance(self.remote_addr, Unset):
            remote_addr = UNSET
        else:
            remote_addr = self.remote_addr


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "action": action,
            "actor": actor,
            "at": at,
            "detail": detail,
            "id": id,
            "outcome": outcome,
            "role": role,
        })
        if payment_id is not UNSET:
            field_dict["payment_id"] = payment_id
        if remote_addr is not UNSET:
            field_dict["remote_addr"] = remote_addr

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.audit_out_detail import AuditOutDetail # noqa: PLC0415
        d = dict(src_dict)
        action = d.pop("action")

        actor = d.pop("actor")

        at = d.pop("at")

        detail = AuditOutDetail.from_dict(d.pop("detail"))




        id = d.pop("id")

        outcome = d.pop("outcome")

        role = d.pop("role")

        def _parse_payment_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        payment_id = _parse_payment_id(d.pop("payment_id", UNSET))


        def _parse_remote_addr(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        remote_addr = _parse_remote_addr(d.pop("remote_addr", UNSET))


        audit_out = cls(
            action=action,
            actor=actor,
            at=at,
            detail=detail,
            id=id,
            outcome=outcome,
            role=role,
            payment_id=payment_id,
            remote_addr=remote_addr,
        )

        return audit_out

