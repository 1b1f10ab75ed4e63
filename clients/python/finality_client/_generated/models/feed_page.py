from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.event_out import EventOut





T = TypeVar("T", bound="FeedPage")



@_attrs_define
class FeedPage:
    """ A page of the feed.

        Attributes:
            events (list[EventOut]):
            next_cursor (str): Pass as `after` to read on; the same value when nothing was new.
     """

    events: list[EventOut]
    next_cursor: str





    def to_dict(self) -> dict[str, Any]:
        from ..models.event_out import EventOut # noqa: PLC0415
        events = []
        for events_item_data in self.events:
            events_item = events_item_data.to_dict()
            events.append(events_item)



        next_cursor = self.next_cursor


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "events": events,
            "next_cursor": next_cursor,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.event_out import EventOut # noqa: PLC0415
        d = dict(src_dict)
        events = []
        _events = d.pop("events")
        for events_item_data in (_events):
            events_item = EventOut.from_dict(events_item_data)



            events.append(events_item)


        next_cursor = d.pop("next_cursor")

        feed_page = cls(
            events=events,
            next_cursor=next_cursor,
        )

        return feed_page

