from enum import StrEnum

class Source(StrEnum):
    MANUAL = "manual"
    STATUS_QUERY = "status_query"
    SWEEP = "sweep"
    WEBHOOK = "webhook"

    def __str__(self) -> str:
        return str(self.value)
