from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="ReconLineOut")



@_attrs_define
class ReconLineOut:
    """ A line that did not simply match, and what became of it.

        Attributes:
            amount (int): Minor units; negative for money going back.
            currency (str):
            kind (str): charge, refund, chargeback, fee, payout, other.
            outcome (str):
            reason (str):
            line (int | None | Unset): The line in the file; null for a payment the report should have
                listed and did not (`missing_from_report`).
            payment_id (None | str | Unset):
            provider_ref (None | str | Unset):
     """

    amount: int
    currency: str
    kind: str
    outcome: str
    reason: str
    line: int | None | Unset = UNSET
    payment_id: None | str | Unset = UNSET
    provider_ref: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        amount = self.amount

        currency = self.currency

        kind = self.kind

        outcome = self.outcome

        reason = self.reason

        line: int | None | Unset
        if isinstance(self.line, Unset):
            line = UNSET
        else:
            line = self.line

        payment_id: None | str | Unset
        if isinstance(self.payment_id, Unset):
            payment_id = UNSET
        else:
            payment_id = self.payment_id

        provider_ref: None | str | Unset
        if isinstance(self.provider_ref, Unset):
            provider_ref = UNSET
        else:
            provider_ref = self.provider_ref


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "amount": amount,
            "currency": currency,
            "kind": kind,
            "outcome": outcome,
            "reason": reason,
        })
        if line is not UNSET:
            field_dict["line"] = line
        if payment_id is not UNSET:
            field_dict["payment_id"] = payment_id
        if provider_ref is not UNSET:
            field_dict["provider_ref"] = provider_ref

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        amount = d.pop("amount")

        currency = d.pop("currency")

        kind = d.pop("kind")

        outcome = d.pop("outcome")

        reason = d.pop("reason")

        def _parse_line(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        line = _parse_line(d.pop("line", UNSET))


        def _parse_payment_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        payment_id = _parse_payment_id(d.pop("payment_id", UNSET))


        def _parse_provider_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_ref = _parse_provider_ref(d.pop("provider_ref", UNSET))


        recon_line_out = cls(
            amount=amount,
            currency=currency,
            kind=kind,
            outcome=outcome,
            reason=reason,
            line=line,
            payment_id=payment_id,
            provider_ref=provider_ref,
        )

        return recon_line_out

