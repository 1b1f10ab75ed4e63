from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="Quantiles")



@_attrs_define
class Quantiles:
    """ p50 / p90 / p99 / max of a set of values (nearest rank); all `None`
    when the set is empty.

        Attributes:
            max_ (float | None | Unset):
            p50 (float | None | Unset):
            p90 (float | None | Unset):
            p99 (float | None | Unset):
     """

    max_: float | None | Unset = UNSET
    p50: float | None | Unset = UNSET
    p90: float | None | Unset = UNSET
    p99: float | None | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        max_: float | None | Unset
        if isinstance(self.max_, Unset):
            max_ = UNSET
        else:
            max_ = self.max_

        p50: float | None | Unset
        if isinstance(self.p50, Unset):
            p50 = UNSET
        else:
            p50 = self.p50

        p90: float | None | Unset
        if isinstance(self.p90, Unset):
            p90 = UNSET
        else:
            p90 = self.p90

        p99: float | None | Unset
        if isinstance(self.p99, Unset):
            p99 = UNSET
        else:
            p99 = self.p99


        field_dict: dict[str, Any] = {}

        field_dict.update({
        })
        if max_ is not UNSET:
            field_dict["max"] = max_
        if p50 is not UNSET:
            field_dict["p50"] = p50
        if p90 is not UNSET:
            field_dict["p90"] = p90
        if p99 is not UNSET:
            field_dict["p99"] = p99

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        def _parse_max_(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        max_ = _parse_max_(d.pop("max", UNSET))


        def _parse_p50(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p50 = _parse_p50(d.pop("p50", UNSET))


        def _parse_p90(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p90 = _parse_p90(d.pop("p90", UNSET))


        def _parse_p99(data: object) -> float | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(float | None | Unset, data)

        p99 = _parse_p99(d.pop("p99", UNSET))


        quantiles = cls(
            max_=max_,
            p50=p50,
            p90=p90,
            p99=p99,
        )

        return quantiles

