from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="EventAmounts")



@_attrs_define
class EventAmounts:
    """ The counters an event carries: each the sum of the provider's
    sub-objects of that kind counted so far, in minor units of `currency`.

        Attributes:
            authorised (int):
            captured (int):
            currency (str):
            dispute_reversed (int): Chargebacks won back.
            disputed (int): Taken back by chargebacks.
            refunded (int):
     """

    authorised: int
    captured: int
    currency: str
    dispute_reversed: int
    disputed: int
    refunded: int





    def to_dict(self) -> dict[str, Any]:
        authorised = self.authorised

        captured = self.captured

        currency = self.currency

        dispute_reversed = self.dispute_reversed

        disputed = self.disputed

        refunded = self.refunded


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "authorised": authorised,
            "captured": captured,
            "currency": currency,
            "dispute_reversed": dispute_reversed,
            "disputed": disputed,
            "refunded": refunded,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        authorised = d.pop("authorised")

        captured = d.pop("captured")

        currency = d.pop("currency")

        dispute_reversed = d.pop("dispute_reversed")

        disputed = d.pop("disputed")

        refunded = d.pop("refunded")

        event_amounts = cls(
            authorised=authorised,
            captured=captured,
            currency=currency,
            dispute_reversed=dispute_reversed,
            disputed=disputed,
            refunded=refunded,
        )

        return event_amounts

