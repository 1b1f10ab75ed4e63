from enum import StrEnum

class PieceKind(StrEnum):
    AUTHORISATION = "authorisation"
    CAPTURE = "capture"
    DISPUTE = "dispute"
    DISPUTE_REVERSAL = "dispute_reversal"
    REFUND = "refund"

    def __str__(self) -> str:
        return str(self.value)
