from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast






T = TypeVar("T", bound="PollOut")



@_attrs_define
class PollOut:
    """ The poll job of an open payment.

        Attributes:
            attempts (int):
            errors (int): Status queries that failed in a row without an answer.
            in_flight (bool):
            last_error (None | str | Unset):
            next_poll_at (None | str | Unset):
     """

    attempts: int
    errors: int
    in_flight: bool
    last_error: None | str | Unset = UNSET
    next_poll_at: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        attempts = self.attempts

        errors = self.errors

        in_flight = self.in_flight

        last_error: None | str | Unset
        if isinstance(self.last_error, Unset):
            last_error = UNSET
        else:
            last_error = self.last_error

        next_poll_at: None | str | Unset
        if isinstance(self.next_poll_at, Unset):
            next_poll_at = UNSET
        else:
            next_poll_at = self.next_poll_at


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "attempts": attempts,
            "errors": errors,
            "in_flight": in_flight,
        })
        if last_error is not UNSET:
            field_dict["last_error"] = last_error
        if next_poll_at is not UNSET:
            field_dict["next_poll_at"] = next_poll_at

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        attempts = d.pop("attempts")

        errors = d.pop("errors")

        in_flight = d.pop("in_flight")

        def _parse_last_error(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        last_error = _parse_last_error(d.pop("last_error", UNSET))


        def _parse_next_poll_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        next_poll_at = _parse_next_poll_at(d.pop("next_poll_at", UNSET))


        poll_out = cls(
            attempts=attempts,
            errors=errors,
            in_flight=in_flight,
            last_error=last_error,
            next_poll_at=next_poll_at,
        )

        return poll_out

