from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.attempt_out import AttemptOut





T = TypeVar("T", bound="AttemptsOut")



@_attrs_define
class AttemptsOut:
    """ A payment's provider calls.

        Attributes:
            attempts (list[AttemptOut]):
            payment_id (str):
     """

    attempts: list[AttemptOut]
    payment_id: str





    def to_dict(self) -> dict[str, Any]:
        from ..models.attempt_out import AttemptOut # noqa: PLC0415
        attempts = []
        for attempts_item_data in self.attempts:
            attempts_item = attempts_item_data.to_dict()
            attempts.append(attempts_item)



        payment_id = self.payment_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "attempts": attempts,
            "payment_id": payment_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.attempt_out import AttemptOut # noqa: PLC0415
        d = dict(src_dict)
        attempts = []
        _attempts = d.pop("attempts")
        for attempts_item_data in (_attempts):
            attempts_item = AttemptOut.from_dict(attempts_item_data)



            attempts.append(attempts_item)


        payment_id = d.pop("payment_id")

        attempts_out = cls(
            attempts=attempts,
            payment_id=payment_id,
        )

        return attempts_out

