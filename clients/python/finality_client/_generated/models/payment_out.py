from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..models.kind import Kind
from ..models.source import Source
from ..models.status import Status
from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.amounts_out import AmountsOut
  from ..models.flag_out import FlagOut
  from ..models.history_out import HistoryOut
  from ..models.payment_out_metadata import PaymentOutMetadata
  from ..models.poll_out import PollOut





T = TypeVar("T", bound="PaymentOut")



@_attrs_define
class PaymentOut:
    """ The payment resource, as `GET /v1/payments/{id}` returns it.

        Attributes:
            amount (int):
            created_at (str):
            currency (str):
            id (str):
            kind (Kind): What kind of money movement is tracked; each has its own transition table.
            metadata (PaymentOutMetadata):
            provider (str):
            status (Status): The canonical status of a payment, refund or payout. Provider-specific
                vocabularies are mapped onto these by the provider adapters.
            updated_at (str):
            account (None | str | Unset): The provider's account it belongs to; `null`: the provider's own.
            amounts (AmountsOut | None | Unset):
            finalized_at (None | str | Unset):
            flags (list[FlagOut] | None | Unset): On the single resource: facts after final that needed a person,
                open (`closed_at` null) and closed, oldest first. Absent in lists.
            history (list[HistoryOut] | None | Unset): On the single resource: every status change, oldest first. Absent in
                lists.
            merchant_ref (None | str | Unset):
            poll (None | PollOut | Unset):
            provider_ref (None | str | Unset): `null` until found when registered by `merchant_ref` alone.
            status_source (None | Source | Unset):
     """

    amount: int
    created_at: str
    currency: str
    id: str
    kind: Kind
    metadata: PaymentOutMetadata
    provider: str
    status: Status
    updated_at: str
    account: None | str | Unset = UNSET
    amounts: AmountsOut | None | Unset = UNSET
    finalized_at: None | str | Unset = UNSET
    flags: list[FlagOut] | None | Unset = UNSET
    history: list[HistoryOut] | None | Unset = UNSET
    merchant_ref: None | str | Unset = UNSET
    poll: None | PollOut | Unset = UNSET
    provider_ref: None | str | Unset = UNSET
    status_source: None | Source | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.amounts_out import AmountsOut # noqa: PLC0415
        from ..models.flag_out import FlagOut # noqa: PLC0415
        from ..models.history_out import HistoryOut # noqa: PLC0415
        from ..models.payment_out_metadata import PaymentOutMetadata # noqa: PLC0415
        from ..models.poll_out import PollOut # noqa: PLC0415
        amount = self.amount

        created_at = self.created_at

        currency = self.currency

        id = self.id

        kind = self.kind.value

        metadata = self.metadata.to_dict()

        provider = self.provider

        status = self.status.value

        updated_at = self.updated_at

        account: None | str | Unset
        if isinstance(self.account, Unset):
            account = UNSET
        else:
            account = self.account

        amounts: dict[str, Any] | None | Unset
        if isinstance(self.amounts, Unset):
            amounts = UNSET
        elif isinstance(self.amounts, AmountsOut):
            amounts = self.amounts.to_dict()
        else:
            amounts = self.amounts

        finalized_at: None | str | Unset
        if isinstance(self.finalized_at, Unset):
            finalized_at = UNSET
        else:
            finalized_at = self.finalized_at

        flags: list[dict[str, Any]] | None | Unset
        if isinstance(self.flags, Unset):
            flags = UNSET
        elif isinstance(self.flags, list):
            flags = []
            for flags_type_0_item_data in self.flags:
                flags_type_0_item = flags_type_0_item_data.to_dict()
                flags.append(flags_type_0_item)


        else:
            flags = self.flags

        history: list[dict[str, Any]] | None | Unset
        if isinstance(self.history, Unset):
            history = UNSET
        elif isinstance(self.history, list):
            history = []
            for history_type_0_item_data in self.history:
                history_type_0_item = history_type_0_item_data.to_dict()
                history.append(history_type_0_item)


        else:
            history = self.history

        merchant_ref: None | str | Unset
        if isinstance(self.merchant_ref, Unset):
            merchant_ref = UNSET
        else:
            merchant_ref = self.merchant_ref

        poll: dict[str, Any] | None | Unset
        if isinstance(self.poll, Unset):
            poll = UNSET
        elif isinstance(self.poll, PollOut):
            poll = self.poll.to_dict()
        else:
            poll = self.poll

        provider_ref: None | str | Unset
        if isinstance(self.provider_ref, Unset):
            provider_ref = UNSET
        else:
            provider_ref = self.provider_ref

        status_source: None | str | Unset
        if isinstance(self.status_source, Unset):
            status_source = UNSET
        elif isinstance(self.status_source, Source):
            status_source = self.status_source.value
        else:
            status_source = self.status_source


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "amount": amount,
            "created_at": created_at,
            "currency": currency,
            "id": id,
            "kind": kind,
            "metadata": metadata,
            "provider": provider,
            "status": status,
            "updated_at": updated_at,
        })
        if account is not UNSET:
            field_dict["account"] = account
        if amounts is not UNSET:
            field_dict["amounts"] = amounts
        if finalized_at is not UNSET:
            field_dict["finalized_at"] = finalized_at
        if flags is not UNSET:
            field_dict["flags"] = flags
        if history is not UNSET:
            field_dict["history"] = history
        if merchant_ref is not UNSET:
            field_dict["merchant_ref"] = merchant_ref
        if poll is not UNSET:
            field_dict["poll"] = poll
        if provider_ref is not UNSET:
            field_dict["provider_ref"] = provider_ref
        if status_source is not UNSET:
            field_dict["status_source"] = status_source

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.amounts_out import AmountsOut # noqa: PLC0415
        from ..models.flag_out import FlagOut # noqa: PLC0415
        from ..models.history_out import HistoryOut # noqa: PLC0415
        from ..models.payment_out_metadata import PaymentOutMetadata # noqa: PLC0415
        from ..models.poll_out import PollOut # noqa: PLC0415
        d = dict(src_dict)
        amount = d.pop("amount")

        created_at = d.pop("created_at")

        currency = d.pop("currency")

        id = d.pop("id")

        kind = Kind(d.pop("kind"))




        metadata = PaymentOutMetadata.from_dict(d.pop("metadata"))




        provider = d.pop("provider")

        status = Status(d.pop("status"))




        updated_at = d.pop("updated_at")

        def _parse_account(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        account = _parse_account(d.pop("account", UNSET))


        def _parse_amounts(data: object) -> AmountsOut | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                amounts_type_0 = AmountsOut.from_dict(data)



                return amounts_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(AmountsOut | None | Unset, data)

        amounts = _parse_amounts(d.pop("amounts", UNSET))


        def _parse_finalized_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        finalized_at = _parse_finalized_at(d.pop("finalized_at", UNSET))


        def _parse_flags(data: object) -> list[FlagOut] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                flags_type_0 = []
                _flags_type_0 = data
                for flags_type_0_item_data in (_flags_type_0):
                    flags_type_0_item = FlagOut.from_dict(flags_type_0_item_data)



                    flags_type_0.append(flags_type_0_item)

                return flags_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[FlagOut] | None | Unset, data)

        flags = _parse_flags(d.pop("flags", UNSET))


        def _parse_history(data: object) -> list[HistoryOut] | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, list):
                    raise TypeError()
                history_type_0 = []
                _history_type_0 = data
                for history_type_0_item_data in (_history_type_0):
                    history_type_0_item = HistoryOut.from_dict(history_type_0_item_data)



                    history_type_0.append(history_type_0_item)

                return history_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(list[HistoryOut] | None | Unset, data)

        history = _parse_history(d.pop("history", UNSET))


        def _parse_merchant_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        merchant_ref = _parse_merchant_ref(d.pop("merchant_ref", UNSET))


        def _parse_poll(data: object) -> None | PollOut | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                poll_type_0 = PollOut.from_dict(data)



                return poll_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | PollOut | Unset, data)

        poll = _parse_poll(d.pop("poll", UNSET))


        def _parse_provider_ref(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        provider_ref = _parse_provider_ref(d.pop("provider_ref", UNSET))


        def _parse_status_source(data: object) -> None | Source | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_source_type_0 = Source(data)



                return status_source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | Source | Unset, data)

        status_source = _parse_status_source(d.pop("status_source", UNSET))


        payment_out = cls(
            amount=amount,
            created_at=created_at,
            currency=currency,
            id=id,
            kind=kind,
            metadata=metadata,
            provider=provider,
            status=status,
            updated_at=updated_at,
            account=account,
            amounts=amounts,
            finalized_at=finalized_at,
            flags=flags,
            history=history,
            merchant_ref=merchant_ref,
            poll=poll,
            provider_ref=provider_ref,
            status_source=status_source,
        )

        return payment_out

