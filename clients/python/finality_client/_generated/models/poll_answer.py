from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset







T = TypeVar("T", bound="PollAnswer")



@_attrs_define
class PollAnswer:
    """ What a poll-now request did.

        Attributes:
            poll (str): `scheduled`, or `in_flight` when a worker is asking right now.
     """

    poll: str





    def to_dict(self) -> dict[str, Any]:
        poll = self.poll


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "poll": poll,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        d = dict(src_dict)
        poll = d.pop("poll")

        poll_answer = cls(
            poll=poll,
        )

        return poll_answer

