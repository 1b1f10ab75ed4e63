from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="RedeliverOut")



@_attrs_define
class RedeliverOut:
    """ 
        Attributes:
            redelivery_id (int): The request's id (see `redeliveries` in the destinations' list).
     """

    redelivery_id: int





    def to_dict(self) -> dict[str, Any]:
        redelivery_id = self.redelivery_id


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "redelivery_id": redelivery_id,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        redelivery_id = d.pop("redelivery_id")

        redeliver_out = cls(
            redelivery_id=redelivery_id,
        )

        return redeliver_out

