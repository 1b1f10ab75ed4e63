from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.piece import Piece





T = TypeVar("T", bound="AmountsOut")



@_attrs_define
class AmountsOut:
    """ A payment's money as the provider moved it: each counter the sum of
    the provider's sub-objects of that kind that succeeded, every one
    listed (a capture, a refund, an authorisation attempt, a dispute, by
    the provider's own id), so a duplicate never counts twice. In the
    payment's currency, in minor units. All zero where the provider's
    events name no sub-objects (see docs/AMOUNTS.md).

        Attributes:
            authorised (int):
            captured (int):
            currency (str):
            dispute_reversed (int): Chargebacks won back.
            disputed (int): Taken back by chargebacks.
            pieces (list[Piece]):
            refunded (int):
     """

    authorised: int
    captured: int
    currency: str
    dispute_reversed: int
    disputed: int
    pieces: list[Piece]
    refunded: int





    def to_dict(self) -> dict[str, Any]:
        from ..models.piece import Piece # noqa: PLC0415
        authorised = self.authorised

        captured = self.captured

        currency = self.currency

        dispute_reversed = self.dispute_reversed

        disputed = self.disputed

        pieces = []
        for pieces_item_data in self.pieces:
            pieces_item = pieces_item_data.to_dict()
            pieces.append(pieces_item)



        refunded = self.refunded


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "authorised": authorised,
            "captured": captured,
            "currency": currency,
            "dispute_reversed": dispute_reversed,
            "disputed": disputed,
            "pieces": pieces,
            "refunded": refunded,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.piece import Piece # noqa: PLC0415
        d = dict(src_dict)
        authorised = d.pop("authorised")

        captured = d.pop("captured")

        currency = d.pop("currency")

        dispute_reversed = d.pop("dispute_reversed")

        disputed = d.pop("disputed")

        pieces = []
        _pieces = d.pop("pieces")
        for pieces_item_data in (_pieces):
            pieces_item = Piece.from_dict(pieces_item_data)



            pieces.append(pieces_item)


        refunded = d.pop("refunded")

        amounts_out = cls(
            authorised=authorised,
            captured=captured,
            currency=currency,
            dispute_reversed=dispute_reversed,
            disputed=disputed,
            pieces=pieces,
            refunded=refunded,
        )

        return amounts_out

