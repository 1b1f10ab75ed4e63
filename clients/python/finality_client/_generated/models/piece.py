from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.piece_kind import PieceKind
from ..models.piece_state import PieceState






T = TypeVar("T", bound="Piece")



@_attrs_define
class Piece:
    """ One sub-object as the provider reported it.

        Attributes:
            amount (int): Minor units of `currency`, never negative.
            currency (str): ISO 4217, upper case.
            id (str): The provider's own id for it (a capture's `pspReference`, a refund
                id): what makes a duplicate a duplicate.
            kind (PieceKind): What a sub-object is.
            state (PieceState): Where a sub-object stands.
     """

    amount: int
    currency: str
    id: str
    kind: PieceKind
    state: PieceState
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)





    def to_dict(self) -> dict[str, Any]:
        amount = self.amount

        currency = self.currency

        id = self.id

        kind = self.kind.value

        state = self.state.value


        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({
            "amount": amount,
            "currency": currency,
            "id": id,
            "kind": kind,
            "state": state,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount = d.pop("amount")

        currency = d.pop("currency")

        id = d.pop("id")

        kind = PieceKind(d.pop("kind"))




        state = PieceState(d.pop("state"))




        piece = cls(
            amount=amount,
            currency=currency,
            id=id,
            kind=kind,
            state=state,
        )


        piece.additional_properties = d
        return piece

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
