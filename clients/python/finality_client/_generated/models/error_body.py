from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.error_detail import ErrorDetail





T = TypeVar("T", bound="ErrorBody")



@_attrs_define
class ErrorBody:
    """ The body of every error answer (4xx and 5xx): a stable `code` to branch
    on, a `message` for people, and the request `field` at fault when one is.

        Attributes:
            error (ErrorDetail): See [`ErrorBody`].
     """

    error: ErrorDetail





    def to_dict(self) -> dict[str, Any]:
        from ..models.error_detail import ErrorDetail # noqa: PLC0415
        error = self.error.to_dict()


        field_dict: dict[str, Any] = {}

        field_dict.update({
            "error": error,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.error_detail import ErrorDetail # noqa: PLC0415
        d = dict(src_dict)
        error = ErrorDetail.from_dict(d.pop("error"))




        error_body = cls(
            error=error,
        )

        return error_body

