from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.kind import Kind
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.payment_in_metadata_type_0 import PaymentInMetadataType0





T = TypeVar("T", bound="PaymentIn")



@_attrs_define
class PaymentIn:
    """ `POST /v1/payments` body. Fields are optional here so that a missing one
    is reported by name, with the same shape as every other field error.

        Attributes:
            amount (int): Minor units of the currency (cents; yen for JPY), positive, at most
                2^53 − 1 and what the provider takes.
            currency (str): An ISO 4217 code with a minor unit, upper case.
            id (str): Your id for it: 1 to 255 printable ASCII characters, no spaces or `/`.
            provider (str): A configured provider's name.
            account (None | str | Unset): One of the provider's accounts (a Stripe connected account `acct_…`,
                an Adyen merchant account, an Alipay app id): the payment is polled
                as that account. Absent: the provider's own.
            kind (Kind | None | Unset):
            merchant_ref (None | str | Unset):
            metadata (None | PaymentInMetadataType0 | Unset): Your own keys and values, kept on the payment and returned (at
                most 16,384 bytes as compact JSON).
            provider_ref (None | str | Unset): The provider's id; give `merchant_ref` instead when it is not known
                (the create call timed out).
     """

    amount: int
    currency: str
    id: str
    provider: str
    account: None | str | Unset = UNSET
    kind: Kind | None | Unset = UNSET
    merchant_ref: None | str | Unset = UNSET
    metadata: None | PaymentInMetadataType0 | Unset = UNSET
    provider_ref: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.payment_in_metadata_type_0 import PaymentInMetadataType0 # noqa: PLC0415
        amount = self.amount

        currency = self.currency

        id = self.id

        provider = self.provider

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        kind: None | str | Unset
        if isinstance(self.kind, Unset):
            kind = UNSET
        elif isinstance(self.kind, Kind):
            kind = self.kind.value
        else:
            kind = self.kind

        merchant_ref: None | str | Unset
        if isinstance(self.merchant_ref, Unset):
            merchant_ref = UNSET
        else:
            merchant_ref = self.merchant_ref

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, PaymentInMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        provider_ref: None | str | Unset
        if isinstance(self.provider_ref, Unset):
            provider_ref = UNSET
        else:
            provider_ref = self.provider_ref


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "amount": amount,
            "currency": currency,
            "id": id,
            "provider": provider,
        })
        if account is not UNSET:
            field_dict["account"] = account
        if kind is not UNSET:
            field_dict["kind"] = kind
        if merchant_ref is not UNSET:
            field_dict["merchant_ref"] = merchant_ref
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if provider_ref is not UNSET:
            field_dict["provider_ref"] = provider_ref

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.payment_in_metadata_type_0 import PaymentInMetadataType0 # noqa: PLC0415
        d = dict(src_dict)
        amount = d.pop("amount")

        currency = d.pop("currency")

        id = d.pop("id")

        provider = d.pop("provider")

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))


        def _parse_kind(data: object) -> Kind | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                kind_type_0 = Kind(data)



                return kind_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Kind | None | Unset, data)

        kind = _parse_kind(d.pop("kind", UNSET))


        def _parse_merchant_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        merchant_ref = _parse_merchant_ref(d.pop("merchant_ref", UNSET))


        def _parse_metadata(data: object) -> None | PaymentInMetadataType0 | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = PaymentInMetadataType0.from_dict(data)



                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PaymentInMetadataType0 | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))


        def _parse_provider_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_ref = _parse_provider_ref(d.pop("provider_ref", UNSET))


        payment_in = cls(
            amount=amount,
            currency=currency,
            id=id,
            provider=provider,
            account=account,
            kind=kind,
            merchant_ref=merchant_ref,
            metadata=metadata,
            provider_ref=provider_ref,
        )

        return payment_in

