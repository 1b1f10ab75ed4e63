from enum import StrEnum

class Status(StrEnum):
    CANCELLED = "cancelled"
    FAILED = "failed"
    NEEDS_REVIEW = "needs_review"
    PENDING = "pending"
    PROCESSING = "processing"
    REVERSED = "reversed"
    SUCCEEDED = "succeeded"

    def __str__(self) -> str:
        return str(self.value)
