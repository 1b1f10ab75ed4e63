from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from ..types import UNSET, Unset
from typing import cast

if TYPE_CHECKING:
  from ..models.lost_range import LostRange





T = TypeVar("T", bound="ErrorDetail")



@_attrs_define
class ErrorDetail:
    """ See [`ErrorBody`].

        Attributes:
            code (str): `invalid_field`, `malformed_json`, `not_found`, `unauthorized`,
                `forbidden`, `id_conflict`, `transition_not_allowed`, `already_final`,
                `too_large`, `unavailable`, `internal`, `archived`, `feed_rewound`, …
            message (str):
            archive (None | str | Unset): `archived` (410): the archive file holding the payment, relative
                to the archive directory (`finality archive restore` takes it).
            archived_at (None | str | Unset): `archived` (410): when it was archived (RFC 3339).
            field (None | str | Unset): The request field at fault (`amount`, `status`, `cursor`, …).
            lost (LostRange | None | Unset):
            resume_after (None | str | Unset): `feed_rewound` (409): the cursor to read on from (events from it on
                may repeat ones read before, under the same ids).
     """

    code: str
    message: str
    archive: None | str | Unset = UNSET
    archived_at: None | str | Unset = UNSET
    field: None | str | Unset = UNSET
    lost: LostRange | None | Unset = UNSET
    resume_after: None | str | Unset = UNSET





    def to_dict(self) -> dict[str, Any]:
        from ..models.lost_range import LostRange # noqa: PLC0415
        code = self.code

        message = self.message

        archive: None | str | Unset
        if isinstance(self.archive, Unset):
            archive = UNSET
        else:
            archive = self.archive

        archived_at: None | str | Unset
        if isinstance(self.archived_at, Unset):
            archived_at = UNSET
        else:
            archived_at = self.archived_at

        field: None | str | Unset
        if isinstance(self.field, Unset):
            field = UNSET
        else:
            field = self.field

        lost: dict[str, Any] | None | Unset
        if isinstance(self.lost, Unset):
            lost = UNSET
        elif isinstance(self.lost, LostRange):
            lost = self.lost.to_dict()
        else:
            lost = self.lost

        resume_after: None | str | Unset
        if isinstance(self.resume_after, Unset):
            resume_after = UNSET
        else:
            resume_after = self.resume_after


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "code": code,
            "message": message,
        })
        if archive is not UNSET:
            field_dict["archive"] = archive
        if archived_at is not UNSET:
            field_dict["archived_at"] = archived_at
        if field is not UNSET:
            field_dict["field"] = field
        if lost is not UNSET:
            field_dict["lost"] = lost
        if resume_after is not UNSET:
            field_dict["resume_after"] = resume_after

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.lost_range import LostRange # noqa: PLC0415
        d = dict(src_dict)
        code = d.pop("code")

        message = d.pop("message")

        def _parse_archive(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        archive = _parse_archive(d.pop("archive", UNSET))


        def _parse_archived_at(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        archived_at = _parse_archived_at(d.pop("archived_at", UNSET))


        def _parse_field(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        field = _parse_field(d.pop("field", UNSET))


        def _parse_lost(data: object) -> LostRange | None | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                lost_type_0 = LostRange.from_dict(data)



                return lost_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(LostRange | None | Unset, data)

        lost = _parse_lost(d.pop("lost", UNSET))


        def _parse_resume_after(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        resume_after = _parse_resume_after(d.pop("resume_after", UNSET))


        error_detail = cls(
            code=code,
            message=message,
            archive=archive,
            archived_at=archived_at,
            field=field,
            lost=lost,
            resume_after=resume_after,
        )

        return error_detail

