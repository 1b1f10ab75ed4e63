from enum import StrEnum

class Kind(StrEnum):
    PAYMENT = "payment"
    PAYOUT = "payout"
    REFUND = "refund"

    def __str__(self) -> str:
        return str(self.value)
