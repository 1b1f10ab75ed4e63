from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.source import Source
from ..models.status import Status
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.event_amounts import EventAmounts
  from ..models.event_out_metadata_type_0 import EventOutMetadataType0
  from ..models.flag_out import FlagOut





T = TypeVar("T", bound="EventOut")



@_attrs_define
class EventOut:
    """ One event, as pushed and as read from the feed (schema 3,
    `docs/event.schema.json`): a status change, or (`payment.amounts`,
    `payment.flagged`, `payment.flag_resolved`) a fact beside one. Schema
    1's and 2's fields are all here, so a reader built on them keeps
    working; it ignores the types it does not know.

        Attributes:
            id (str): The event's id (also the `webhook-id` it is pushed with): deduplicate on it.
            kind (str): `payment`, `refund` or `payout`.
            occurred_at (str):
            payment_id (str):
            schema (int): Always 3.
            seq (int): Its position in the feed.
            source (Source): Where a status change came from; recorded on every history row and event.
            status (Status): The canonical status of a payment, refund or payout. Provider-specific
                vocabularies are mapped onto these by the provider adapters.
            type_ (str): `payment.succeeded`, `refund.failed`, …
            account (None | str | Unset): The provider's account the payment belongs to (`null`: the provider's own).
            actor (None | str | Unset): Who, for a manual transition.
            amount (int | None | Unset): Minor units of `currency`; this and the payment's fields below are
                `null` only when retention archived the payment before the event was read.
            amounts (EventAmounts | None | Unset):
            currency (None | str | Unset):
            flag (FlagOut | None | Unset):
            merchant_ref (None | str | Unset):
            metadata (EventOutMetadataType0 | None | Unset): The JSON object registered with the payment.
            previous_status (None | Status | Unset):
            provider (None | str | Unset):
            provider_ref (None | str | Unset):
            reason (None | str | Unset): Why (a review, a manual resolve, …).
     """

    id: str
    kind: str
    occurred_at: str
    payment_id: str
    schema: int
    seq: int
    source: Source
    status: Status
    type_: str
    account: None | str | Unset = UNSET
    actor: None | str | Unset = UNSET
    amount: int | None | Unset = UNSET
    amounts: EventAmounts | None | Unset = UNSET
    currency: None | str | Unset = UNSET
    flag: FlagOut | None | Unset = UNSET
    merchant_ref: None | str | Unset = UNSET
    metadata: EventOutMetadataType0 | None | Unset = UNSET
    previous_status: None | Status | Unset = UNSET
    provider: None | str | Unset = UNSET
    provider_ref: None | str | Unset = UNSET
    reason: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.event_amounts import EventAmounts # noqa: PLC0415
        from ..models.event_out_metadata_type_0 import EventOutMetadataType0 # noqa: PLC0415
        from ..models.flag_out import FlagOut # noqa: PLC0415
        id = self.id

        kind = self.kind

        occurred_at = self.occurred_at

        payment_id = self.payment_id

        schema = self.schema

        seq = self.seq

        source = self.source.value

        status = self.status.value

        type_ = self.type_

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        actor: None | str | Unset
        if isinstance(self.actor, Unset):
            actor = UNSET
        else:
            actor = self.actor

        amount: int | None | Unset
        if isinstance(self.amount, Unset):
            amount = UNSET
        else:
            amount = self.amount

        amounts: dict[str, Any] | None | Unset
        if isinstance(self.amounts, Unset):
            amounts = UNSET
        elif isinstance(self.amounts, EventAmounts):
            amounts = self.amounts.to_dict()
        else:
            amounts = self.amounts

        currency: None | str | Unset
        if isinstance(self.currency, Unset):
            currency = UNSET
        else:
            currency = self.currency

        flag: dict[str, Any] | None | Unset
        if isinstance(self.flag, Unset):
            flag = UNSET
        elif isinstance(self.flag, FlagOut):
            flag = self.flag.to_dict()
        else:
            flag = self.flag

        merchant_ref: None | str | Unset
        if isinstance(self.merchant_ref, Unset):
            merchant_ref = UNSET
        else:
            merchant_ref = self.merchant_ref

        metadata: dict[str, Any] | None | Unset
        if isinstance(self.metadata, Unset):
            metadata = UNSET
        elif isinstance(self.metadata, EventOutMetadataType0):
            metadata = self.metadata.to_dict()
        else:
            metadata = self.metadata

        previous_status: None | str | Unset
        if isinstance(self.previous_status, Unset):
            previous_status = UNSET
        elif isinstance(self.previous_status, Status):
            previous_status = self.previous_status.value
        else:
            previous_status = self.previous_status

        provider: None | str | Unset
        if isinstance(self.provider, Unset):
            provider = UNSET
        else:
            provider = self.provider

        provider_ref: None | str | Unset
        if isinstance(self.provider_ref, Unset):
            provider_ref = UNSET
        else:
            provider_ref = self.provider_ref

        reason: None | str | Unset
        if isinstance(self.reason, Unset):
            reason = UNSET
        else:
            reason = self.reason


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "id": id,
            "kind": kind,
            "occurred_at": occurred_at,
            "payment_id": payment_id,
            "schema": schema,
            "seq": seq,
            "source": source,
            "status": status,
            "type": type_,
        })
        if account is not UNSET:
            field_dict["account"] = account
        if actor is not UNSET:
            field_dict["actor"] = actor
        if amount is not UNSET:
            field_dict["amount"] = amount
        if amounts is not UNSET:
            field_dict["amounts"] = amounts
        if currency is not UNSET:
            field_dict["currency"] = currency
        if flag is not UNSET:
            field_dict["flag"] = flag
        if merchant_ref is not UNSET:
            field_dict["merchant_ref"] = merchant_ref
        if metadata is not UNSET:
            field_dict["metadata"] = metadata
        if previous_status is not UNSET:
            field_dict["previous_status"] = previous_status
        if provider is not UNSET:
            field_dict["provider"] = provider
        if provider_ref is not UNSET:
            field_dict["provider_ref"] = provider_ref
        if reason is not UNSET:
            field_dict["reason"] = reason

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_amounts import EventAmounts # noqa: PLC0415
        from ..models.event_out_metadata_type_0 import EventOutMetadataType0 # noqa: PLC0415
        from ..models.flag_out import FlagOut # noqa: PLC0415
        d = dict(src_dict)
        id = d.pop("id")

        kind = d.pop("kind")

        occurred_at = d.pop("occurred_at")

        payment_id = d.pop("payment_id")

        schema = d.pop("schema")

        seq = d.pop("seq")

        source = Source(d.pop("source"))




        status = Status(d.pop("status"))




        type_ = d.pop("type")

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))


        def _parse_actor(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        actor = _parse_actor(d.pop("actor", UNSET))


        def _parse_amount(data: object) -> int | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(int | None | Unset, data)

        amount = _parse_amount(d.pop("amount", UNSET))


        def _parse_amounts(data: object) -> EventAmounts | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                amounts_type_0 = EventAmounts.from_dict(data)



                return amounts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EventAmounts | None | Unset, data)

        amounts = _parse_amounts(d.pop("amounts", UNSET))


        def _parse_currency(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        currency = _parse_currency(d.pop("currency", UNSET))


        def _parse_flag(data: object) -> FlagOut | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                flag_type_0 = FlagOut.from_dict(data)



                return flag_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(FlagOut | None | Unset, data)

        flag = _parse_flag(d.pop("flag", UNSET))


        def _parse_merchant_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        merchant_ref = _parse_merchant_ref(d.pop("merchant_ref", UNSET))


        def _parse_metadata(data: object) -> EventOutMetadataType0 | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                metadata_type_0 = EventOutMetadataType0.from_dict(data)



                return metadata_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(EventOutMetadataType0 | None | Unset, data)

        metadata = _parse_metadata(d.pop("metadata", UNSET))


        def _parse_previous_status(data: object) -> None | Status | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                previous_status_type_0 = Status(data)



                return previous_status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Status | Unset, data)

        previous_status = _parse_previous_status(d.pop("previous_status", UNSET))


        def _parse_provider(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider = _parse_provider(d.pop("provider", UNSET))


        def _parse_provider_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_ref = _parse_provider_ref(d.pop("provider_ref", UNSET))


        def _parse_reason(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        reason = _parse_reason(d.pop("reason", UNSET))


        event_out = cls(
            id=id,
            kind=kind,
            occurred_at=occurred_at,
            payment_id=payment_id,
            schema=schema,
            seq=seq,
            source=source,
            status=status,
            type_=type_,
            account=account,
            actor=actor,
            amount=amount,
            amounts=amounts,
            currency=currency,
            flag=flag,
            merchant_ref=merchant_ref,
            metadata=metadata,
            previous_status=previous_status,
            provider=provider,
            provider_ref=provider_ref,
            reason=reason,
        )

        return event_out

