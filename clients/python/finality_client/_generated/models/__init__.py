""" Contains all the data models used in inputs/outputs """

from .account_in import AccountIn
from .account_out import AccountOut
from .accounts_out import AccountsOut
from .amounts_out import AmountsOut
from .attempt_out import AttemptOut
from .attempts_out import AttemptsOut
from .audit_out import AuditOut
from .audit_out_detail import AuditOutDetail
from .audit_page import AuditPage
from .destination_out import DestinationOut
from .destinations_out import DestinationsOut
from .error_body import ErrorBody
from .error_detail import ErrorDetail
from .event_amounts import EventAmounts
from .event_out import EventOut
from .event_out_metadata_type_0 import EventOutMetadataType0
from .feed_page import FeedPage
from .flag_out import FlagOut
from .flag_page import FlagPage
from .flag_resolve_in import FlagResolveIn
from .history_out import HistoryOut
from .import_out import ImportOut
from .import_out_counts import ImportOutCounts
from .kind import Kind
from .lost_range import LostRange
from .openapi_document_response_200 import OpenapiDocumentResponse200
from .payment_in import PaymentIn
from .payment_in_metadata_type_0 import PaymentInMetadataType0
from .payment_out import PaymentOut
from .payment_out_metadata import PaymentOutMetadata
from .payment_page import PaymentPage
from .piece import Piece
from .piece_kind import PieceKind
from .piece_state import PieceState
from .poll_answer import PollAnswer
from .poll_out import PollOut
from .provider_stats import ProviderStats
from .provider_stats_errors import ProviderStatsErrors
from .provider_stats_final_by import ProviderStatsFinalBy
from .quantiles import Quantiles
from .rate_limit_io import RateLimitIo
from .recon_line_out import ReconLineOut
from .recon_run_detail import ReconRunDetail
from .recon_run_out import ReconRunOut
from .recon_run_out_counts import ReconRunOutCounts
from .recon_runs_out import ReconRunsOut
from .redeliver_in import RedeliverIn
from .redeliver_out import RedeliverOut
from .redelivery_out import RedeliveryOut
from .resolve_in import ResolveIn
from .rewind_in import RewindIn
from .rewound_out import RewoundOut
from .source import Source
from .stats_out import StatsOut
from .status import Status
from .sweep_run_out import SweepRunOut
from .sweep_run_out_findings import SweepRunOutFindings
from .sweep_runs_out import SweepRunsOut

__all__ = (
    "AccountIn",
    "AccountOut",
    "AccountsOut",
    "AmountsOut",
    "AttemptOut",
    "AttemptsOut",
    "AuditOut",
    "AuditOutDetail",
    "AuditPage",
    "DestinationOut",
    "DestinationsOut",
    "ErrorBody",
    "ErrorDetail",
    "EventAmounts",
    "EventOut",
    "EventOutMetadataType0",
    "FeedPage",
    "FlagOut",
    "FlagPage",
    "FlagResolveIn",
    "HistoryOut",
    "ImportOut",
    "ImportOutCounts",
    "Kind",
    "LostRange",
    "OpenapiDocumentResponse200",
    "PaymentIn",
    "PaymentInMetadataType0",
    "PaymentOut",
    "PaymentOutMetadata",
    "PaymentPage",
    "Piece",
    "PieceKind",
    "PieceState",
    "PollAnswer",
    "PollOut",
    "ProviderStats",
    "ProviderStatsErrors",
    "ProviderStatsFinalBy",
    "Quantiles",
    "RateLimitIo",
    "ReconLineOut",
    "ReconRunDetail",
    "ReconRunOut",
    "ReconRunOutCounts",
    "ReconRunsOut",
    "RedeliverIn",
    "RedeliverOut",
    "RedeliveryOut",
    "ResolveIn",
    "RewindIn",
    "RewoundOut",
    "Source",
    "StatsOut",
    "Status",
    "SweepRunOut",
    "SweepRunOutFindings",
    "SweepRunsOut",
)
