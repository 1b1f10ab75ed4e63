from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.payment_out import PaymentOut





T = TypeVar("T", bound="PaymentPage")



@_attrs_define
class PaymentPage:
    """ A page of payments, in id order.

        Attributes:
            payments (list[PaymentOut]):
            next_cursor (None | str | Unset): Pass as `cursor` for the next page; `null` on the last.
     """

    payments: list[PaymentOut]
    next_cursor: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.payment_out import PaymentOut # noqa: PLC0415
        payments = []
        for payments_item_data in self.payments:
            payments_item = payments_item_data.to_dict()
            payments.append(payments_item)



        next_cursor: None | str | Unset
        if isinstance(self.next_cursor, Unset):
            next_cursor = UNSET
        else:
            next_cursor = self.next_cursor


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "payments": payments,
        })
        if next_cursor is not UNSET:
            field_dict["next_cursor"] = next_cursor

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.payment_out import PaymentOut # noqa: PLC0415
        d = dict(src_dict)
        payments = []
        _payments = d.pop("payments")
        for payments_item_data in (_payments):
            payments_item = PaymentOut.from_dict(payments_item_data)



            payments.append(payments_item)


        def _parse_next_cursor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_cursor = _parse_next_cursor(d.pop("next_cursor", UNSET))


        payment_page = cls(
            payments=payments,
            next_cursor=next_cursor,
        )

        return payment_page

