from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset






T = TypeVar("T", bound="RateLimitIo")



@_attrs_define
class RateLimitIo:
    """ `rate_limit = { per_second, burst }`.

        Attributes:
            per_second (float):
            burst (int | Unset):
     """

    per_second: float
    burst: int | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        per_second = self.per_second

        burst = self.burst


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "per_second": per_second,
        })
        if burst is not UNSET:
            field_dict["burst"] = burst

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        per_second = d.pop("per_second")

        burst = d.pop("burst", UNSET)

        rate_limit_io = cls(
            per_second=per_second,
            burst=burst,
        )

        return rate_limit_io

