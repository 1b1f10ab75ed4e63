from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, BinaryIO, TextIO, TYPE_CHECKING, Generator

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

from typing import cast

if TYPE_CHECKING:
  from ..models.account_out import AccountOut





T = TypeVar("T", bound="AccountsOut")



@_attrs_define
class AccountsOut:
    """ Every provider's accounts on this node.

        Attributes:
            accounts (list[AccountOut]):
     """

    accounts: list[AccountOut]





    def to_dict(self) -> dict[str, Any]:
        from ..models.account_out import AccountOut # noqa: PLC0415
        accounts = []
        for accounts_item_data in self.accounts:
            accounts_item = accounts_item_data.to_dict()
            accounts.append(accounts_item)




        field_dict: dict[str, Any] = {}

        field_dict.update({
            "accounts": accounts,
        })

        return field_dict



    @classmethod
    def from_dict(cls: type[T], src_dict: Mapping[str, Any]) -> T:
        from ..models.account_out import AccountOut # noqa: PLC0415
        d = dict(src_dict)
        accounts = []
        _accounts = d.pop("accounts")
        for accounts_item_data in (_accounts):
            accounts_item = AccountOut.from_dict(accounts_item_data)



            accounts.append(accounts_item)


        accounts_out = cls(
            accounts=accounts,
        )

        return accounts_out

