from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class XdropReport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    XDROP_REPORT_LONGEST: _ClassVar[XdropReport]
    XDROP_REPORT_BEST: _ClassVar[XdropReport]
XDROP_REPORT_LONGEST: XdropReport
XDROP_REPORT_BEST: XdropReport

class PairHmmBatches(_message.Message):
    __slots__ = ("read_bases", "read_quals", "read_ins", "read_del", "read_gcp", "read_offsets", "hap_bases", "hap_offsets", "batch_reads", "batch_haps")
    READ_BASES_FIELD_NUMBER: _ClassVar[int]
    READ_QUALS_FIELD_NUMBER: _ClassVar[int]
    READ_INS_FIELD_NUMBER: _ClassVar[int]
    READ_DEL_FIELD_NUMBER: _ClassVar[int]
    READ_GCP_FIELD_NUMBER: _ClassVar[int]
    READ_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    HAP_BASES_FIELD_NUMBER: _ClassVar[int]
    HAP_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    BATCH_READS_FIELD_NUMBER: _ClassVar[int]
    BATCH_HAPS_FIELD_NUMBER: _ClassVar[int]
    read_bases: bytes
    read_quals: bytes
    read_ins: bytes
    read_del: bytes
    read_gcp: bytes
    read_offsets: bytes
    hap_bases: bytes
    hap_offsets: bytes
    batch_reads: bytes
    batch_haps: bytes
    def __init__(self, read_bases: _Optional[bytes] = ..., read_quals: _Optional[bytes] = ..., read_ins: _Optional[bytes] = ..., read_del: _Optional[bytes] = ..., read_gcp: _Optional[bytes] = ..., read_offsets: _Optional[bytes] = ..., hap_bases: _Optional[bytes] = ..., hap_offsets: _Optional[bytes] = ..., batch_reads: _Optional[bytes] = ..., batch_haps: _Optional[bytes] = ...) -> None: ...

class PairHmmRequest(_message.Message):
    __slots__ = ("batches", "use_double", "shared_file")
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    USE_DOUBLE_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILE_FIELD_NUMBER: _ClassVar[int]
    batches: PairHmmBatches
    use_double: bool
    shared_file: SharedFile
    def __init__(self, batches: _Optional[_Union[PairHmmBatches, _Mapping]] = ..., use_double: _Optional[bool] = ..., shared_file: _Optional[_Union[SharedFile, _Mapping]] = ...) -> None: ...

class PairHmmReply(_message.Message):
    __slots__ = ("log10_likelihoods", "n_pairs", "chunk", "stats")
    LOG10_LIKELIHOODS_FIELD_NUMBER: _ClassVar[int]
    N_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    log10_likelihoods: bytes
    n_pairs: int
    chunk: int
    stats: CallStats
    def __init__(self, log10_likelihoods: _Optional[bytes] = ..., n_pairs: _Optional[int] = ..., chunk: _Optional[int] = ..., stats: _Optional[_Union[CallStats, _Mapping]] = ...) -> None: ...

class XdropPairs(_message.Message):
    __slots__ = ("h_bases", "h_offsets", "v_bases", "v_offsets", "h_pos", "v_pos")
    H_BASES_FIELD_NUMBER: _ClassVar[int]
    H_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    V_BASES_FIELD_NUMBER: _ClassVar[int]
    V_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    H_POS_FIELD_NUMBER: _ClassVar[int]
    V_POS_FIELD_NUMBER: _ClassVar[int]
    h_bases: bytes
    h_offsets: bytes
    v_bases: bytes
    v_offsets: bytes
    h_pos: bytes
    v_pos: bytes
    def __init__(self, h_bases: _Optional[bytes] = ..., h_offsets: _Optional[bytes] = ..., v_bases: _Optional[bytes] = ..., v_offsets: _Optional[bytes] = ..., h_pos: _Optional[bytes] = ..., v_pos: _Optional[bytes] = ...) -> None: ...

class XdropRequest(_message.Message):
    __slots__ = ("pairs", "k", "x", "match", "mismatch", "gap", "report", "shared_file")
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    X_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    MISMATCH_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILE_FIELD_NUMBER: _ClassVar[int]
    pairs: XdropPairs
    k: int
    x: int
    match: int
    mismatch: int
    gap: int
    report: XdropReport
    shared_file: SharedFile
    def __init__(self, pairs: _Optional[_Union[XdropPairs, _Mapping]] = ..., k: _Optional[int] = ..., x: _Optional[int] = ..., match: _Optional[int] = ..., mismatch: _Optional[int] = ..., gap: _Optional[int] = ..., report: _Optional[_Union[XdropReport, str]] = ..., shared_file: _Optional[_Union[SharedFile, _Mapping]] = ...) -> None: ...

class XdropReply(_message.Message):
    __slots__ = ("score", "begin_h", "end_h", "begin_v", "end_v", "cells", "n_pairs", "chunk", "stats")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    BEGIN_H_FIELD_NUMBER: _ClassVar[int]
    END_H_FIELD_NUMBER: _ClassVar[int]
    BEGIN_V_FIELD_NUMBER: _ClassVar[int]
    END_V_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    N_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    score: bytes
    begin_h: bytes
    end_h: bytes
    begin_v: bytes
    end_v: bytes
    cells: bytes
    n_pairs: int
    chunk: int
    stats: CallStats
    def __init__(self, score: _Optional[bytes] = ..., begin_h: _Optional[bytes] = ..., end_h: _Optional[bytes] = ..., begin_v: _Optional[bytes] = ..., end_v: _Optional[bytes] = ..., cells: _Optional[bytes] = ..., n_pairs: _Optional[int] = ..., chunk: _Optional[int] = ..., stats: _Optional[_Union[CallStats, _Mapping]] = ...) -> None: ...

class SeedExtPairs(_message.Message):
    __slots__ = ("query", "query_offsets", "target", "target_offsets", "h0")
    QUERY_FIELD_NUMBER: _ClassVar[int]
    QUERY_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    TARGET_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    H0_FIELD_NUMBER: _ClassVar[int]
    query: bytes
    query_offsets: bytes
    target: bytes
    target_offsets: bytes
    h0: bytes
    def __init__(self, query: _Optional[bytes] = ..., query_offsets: _Optional[bytes] = ..., target: _Optional[bytes] = ..., target_offsets: _Optional[bytes] = ..., h0: _Optional[bytes] = ...) -> None: ...

class SeedExtendRequest(_message.Message):
    __slots__ = ("pairs", "a", "b", "o_del", "e_del", "o_ins", "e_ins", "w", "end_bonus", "zdrop", "shared_file")
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    O_DEL_FIELD_NUMBER: _ClassVar[int]
    E_DEL_FIELD_NUMBER: _ClassVar[int]
    O_INS_FIELD_NUMBER: _ClassVar[int]
    E_INS_FIELD_NUMBER: _ClassVar[int]
    W_FIELD_NUMBER: _ClassVar[int]
    END_BONUS_FIELD_NUMBER: _ClassVar[int]
    ZDROP_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILE_FIELD_NUMBER: _ClassVar[int]
    pairs: SeedExtPairs
    a: int
    b: int
    o_del: int
    e_del: int
    o_ins: int
    e_ins: int
    w: int
    end_bonus: int
    zdrop: int
    shared_file: SharedFile
    def __init__(self, pairs: _Optional[_Union[SeedExtPairs, _Mapping]] = ..., a: _Optional[int] = ..., b: _Optional[int] = ..., o_del: _Optional[int] = ..., e_del: _Optional[int] = ..., o_ins: _Optional[int] = ..., e_ins: _Optional[int] = ..., w: _Optional[int] = ..., end_bonus: _Optional[int] = ..., zdrop: _Optional[int] = ..., shared_file: _Optional[_Union[SharedFile, _Mapping]] = ...) -> None: ...

class SeedExtendReply(_message.Message):
    __slots__ = ("score", "qle", "tle", "gtle", "gscore", "max_off", "n_pairs", "chunk", "stats")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    QLE_FIELD_NUMBER: _ClassVar[int]
    TLE_FIELD_NUMBER: _ClassVar[int]
    GTLE_FIELD_NUMBER: _ClassVar[int]
    GSCORE_FIELD_NUMBER: _ClassVar[int]
    MAX_OFF_FIELD_NUMBER: _ClassVar[int]
    N_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    score: bytes
    qle: bytes
    tle: bytes
    gtle: bytes
    gscore: bytes
    max_off: bytes
    n_pairs: int
    chunk: int
    stats: CallStats
    def __init__(self, score: _Optional[bytes] = ..., qle: _Optional[bytes] = ..., tle: _Optional[bytes] = ..., gtle: _Optional[bytes] = ..., gscore: _Optional[bytes] = ..., max_off: _Optional[bytes] = ..., n_pairs: _Optional[int] = ..., chunk: _Optional[int] = ..., stats: _Optional[_Union[CallStats, _Mapping]] = ...) -> None: ...

class AlignPairs(_message.Message):
    __slots__ = ("query_bases", "query_offsets", "target_bases", "target_offsets")
    QUERY_BASES_FIELD_NUMBER: _ClassVar[int]
    QUERY_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    TARGET_BASES_FIELD_NUMBER: _ClassVar[int]
    TARGET_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    query_bases: bytes
    query_offsets: bytes
    target_bases: bytes
    target_offsets: bytes
    def __init__(self, query_bases: _Optional[bytes] = ..., query_offsets: _Optional[bytes] = ..., target_bases: _Optional[bytes] = ..., target_offsets: _Optional[bytes] = ...) -> None: ...

class AlignRequest(_message.Message):
    __slots__ = ("pairs", "mode", "match", "mismatch", "matrix", "gaps", "gap_open", "gap_extend", "gap_convention", "zdrop", "overhang", "cigar", "shared_file")
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MATCH_FIELD_NUMBER: _ClassVar[int]
    MISMATCH_FIELD_NUMBER: _ClassVar[int]
    MATRIX_FIELD_NUMBER: _ClassVar[int]
    GAPS_FIELD_NUMBER: _ClassVar[int]
    GAP_OPEN_FIELD_NUMBER: _ClassVar[int]
    GAP_EXTEND_FIELD_NUMBER: _ClassVar[int]
    GAP_CONVENTION_FIELD_NUMBER: _ClassVar[int]
    ZDROP_FIELD_NUMBER: _ClassVar[int]
    OVERHANG_FIELD_NUMBER: _ClassVar[int]
    CIGAR_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILE_FIELD_NUMBER: _ClassVar[int]
    pairs: AlignPairs
    mode: str
    match: int
    mismatch: int
    matrix: bytes
    gaps: str
    gap_open: int
    gap_extend: int
    gap_convention: str
    zdrop: int
    overhang: str
    cigar: bool
    shared_file: SharedFile
    def __init__(self, pairs: _Optional[_Union[AlignPairs, _Mapping]] = ..., mode: _Optional[str] = ..., match: _Optional[int] = ..., mismatch: _Optional[int] = ..., matrix: _Optional[bytes] = ..., gaps: _Optional[str] = ..., gap_open: _Optional[int] = ..., gap_extend: _Optional[int] = ..., gap_convention: _Optional[str] = ..., zdrop: _Optional[int] = ..., overhang: _Optional[str] = ..., cigar: _Optional[bool] = ..., shared_file: _Optional[_Union[SharedFile, _Mapping]] = ...) -> None: ...

class AlignReply(_message.Message):
    __slots__ = ("score", "query_begin", "query_end", "target_begin", "target_end", "cigar_ops", "cigar_offsets", "n_pairs", "chunk", "stats")
    SCORE_FIELD_NUMBER: _ClassVar[int]
    QUERY_BEGIN_FIELD_NUMBER: _ClassVar[int]
    QUERY_END_FIELD_NUMBER: _ClassVar[int]
    TARGET_BEGIN_FIELD_NUMBER: _ClassVar[int]
    TARGET_END_FIELD_NUMBER: _ClassVar[int]
    CIGAR_OPS_FIELD_NUMBER: _ClassVar[int]
    CIGAR_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    N_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    score: bytes
    query_begin: bytes
    query_end: bytes
    target_begin: bytes
    target_end: bytes
    cigar_ops: bytes
    cigar_offsets: bytes
    n_pairs: int
    chunk: int
    stats: CallStats
    def __init__(self, score: _Optional[bytes] = ..., query_begin: _Optional[bytes] = ..., query_end: _Optional[bytes] = ..., target_begin: _Optional[bytes] = ..., target_end: _Optional[bytes] = ..., cigar_ops: _Optional[bytes] = ..., cigar_offsets: _Optional[bytes] = ..., n_pairs: _Optional[int] = ..., chunk: _Optional[int] = ..., stats: _Optional[_Union[CallStats, _Mapping]] = ...) -> None: ...

class SharedFile(_message.Message):
    __slots__ = ("sizes", "reply_offset", "handle")
    SIZES_FIELD_NUMBER: _ClassVar[int]
    REPLY_OFFSET_FIELD_NUMBER: _ClassVar[int]
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    sizes: _containers.RepeatedScalarFieldContainer[int]
    reply_offset: int
    handle: str
    def __init__(self, sizes: _Optional[_Iterable[int]] = ..., reply_offset: _Optional[int] = ..., handle: _Optional[str] = ...) -> None: ...

class CallStats(_message.Message):
    __slots__ = ("backend", "cells", "queue_us", "compute_us", "coalesced_requests", "submission_cells")
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    CELLS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_US_FIELD_NUMBER: _ClassVar[int]
    COMPUTE_US_FIELD_NUMBER: _ClassVar[int]
    COALESCED_REQUESTS_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_CELLS_FIELD_NUMBER: _ClassVar[int]
    backend: str
    cells: int
    queue_us: int
    compute_us: int
    coalesced_requests: int
    submission_cells: int
    def __init__(self, backend: _Optional[str] = ..., cells: _Optional[int] = ..., queue_us: _Optional[int] = ..., compute_us: _Optional[int] = ..., coalesced_requests: _Optional[int] = ..., submission_cells: _Optional[int] = ...) -> None: ...

class ServerInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ServerInfoReply(_message.Message):
    __slots__ = ("version", "backend", "requested_backend", "algorithms", "devices", "limits", "batching", "token_required", "shared_files")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    REQUESTED_BACKEND_FIELD_NUMBER: _ClassVar[int]
    ALGORITHMS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    BATCHING_FIELD_NUMBER: _ClassVar[int]
    TOKEN_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILES_FIELD_NUMBER: _ClassVar[int]
    version: str
    backend: str
    requested_backend: str
    algorithms: _containers.RepeatedCompositeFieldContainer[AlgorithmInfo]
    devices: _containers.RepeatedCompositeFieldContainer[Device]
    limits: Limits
    batching: Batching
    token_required: bool
    shared_files: SharedFiles
    def __init__(self, version: _Optional[str] = ..., backend: _Optional[str] = ..., requested_backend: _Optional[str] = ..., algorithms: _Optional[_Iterable[_Union[AlgorithmInfo, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[Device, _Mapping]]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., batching: _Optional[_Union[Batching, _Mapping]] = ..., token_required: _Optional[bool] = ..., shared_files: _Optional[_Union[SharedFiles, _Mapping]] = ...) -> None: ...

class SharedFiles(_message.Message):
    __slots__ = ("enabled", "socket")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    SOCKET_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    socket: str
    def __init__(self, enabled: _Optional[bool] = ..., socket: _Optional[str] = ...) -> None: ...

class AlgorithmInfo(_message.Message):
    __slots__ = ("name", "rpc", "backend", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    RPC_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    rpc: str
    backend: str
    detail: str
    def __init__(self, name: _Optional[str] = ..., rpc: _Optional[str] = ..., backend: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class Device(_message.Message):
    __slots__ = ("kind", "index", "name", "memory_bytes", "cores", "detail")
    KIND_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    kind: str
    index: int
    name: str
    memory_bytes: int
    cores: int
    detail: str
    def __init__(self, kind: _Optional[str] = ..., index: _Optional[int] = ..., name: _Optional[str] = ..., memory_bytes: _Optional[int] = ..., cores: _Optional[int] = ..., detail: _Optional[str] = ...) -> None: ...

class Limits(_message.Message):
    __slots__ = ("max_request_cells", "max_message_bytes")
    MAX_REQUEST_CELLS_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    max_request_cells: int
    max_message_bytes: int
    def __init__(self, max_request_cells: _Optional[int] = ..., max_message_bytes: _Optional[int] = ...) -> None: ...

class Batching(_message.Message):
    __slots__ = ("enabled", "max_wait_us", "max_batch_cells", "workers")
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_US_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_CELLS_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    enabled: bool
    max_wait_us: int
    max_batch_cells: int
    workers: int
    def __init__(self, enabled: _Optional[bool] = ..., max_wait_us: _Optional[int] = ..., max_batch_cells: _Optional[int] = ..., workers: _Optional[int] = ...) -> None: ...

class EditPairs(_message.Message):
    __slots__ = ("query_bases", "query_offsets", "target_bases", "target_offsets")
    QUERY_BASES_FIELD_NUMBER: _ClassVar[int]
    QUERY_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    TARGET_BASES_FIELD_NUMBER: _ClassVar[int]
    TARGET_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    query_bases: bytes
    query_offsets: bytes
    target_bases: bytes
    target_offsets: bytes
    def __init__(self, query_bases: _Optional[bytes] = ..., query_offsets: _Optional[bytes] = ..., target_bases: _Optional[bytes] = ..., target_offsets: _Optional[bytes] = ...) -> None: ...

class EditRequest(_message.Message):
    __slots__ = ("pairs", "mode", "k", "task", "method", "window", "overlap", "shared_file")
    PAIRS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    K_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    WINDOW_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    SHARED_FILE_FIELD_NUMBER: _ClassVar[int]
    pairs: EditPairs
    mode: str
    k: int
    task: str
    method: str
    window: int
    overlap: int
    shared_file: SharedFile
    def __init__(self, pairs: _Optional[_Union[EditPairs, _Mapping]] = ..., mode: _Optional[str] = ..., k: _Optional[int] = ..., task: _Optional[str] = ..., method: _Optional[str] = ..., window: _Optional[int] = ..., overlap: _Optional[int] = ..., shared_file: _Optional[_Union[SharedFile, _Mapping]] = ...) -> None: ...

class EditReply(_message.Message):
    __slots__ = ("distance", "target_begin", "target_end", "cigar_ops", "cigar_offsets", "loc_begin", "loc_end", "loc_offsets", "n_pairs", "chunk", "stats")
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_BEGIN_FIELD_NUMBER: _ClassVar[int]
    TARGET_END_FIELD_NUMBER: _ClassVar[int]
    CIGAR_OPS_FIELD_NUMBER: _ClassVar[int]
    CIGAR_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    LOC_BEGIN_FIELD_NUMBER: _ClassVar[int]
    LOC_END_FIELD_NUMBER: _ClassVar[int]
    LOC_OFFSETS_FIELD_NUMBER: _ClassVar[int]
    N_PAIRS_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    distance: bytes
    target_begin: bytes
    target_end: bytes
    cigar_ops: bytes
    cigar_offsets: bytes
    loc_begin: bytes
    loc_end: bytes
    loc_offsets: bytes
    n_pairs: int
    chunk: int
    stats: CallStats
    def __init__(self, distance: _Optional[bytes] = ..., target_begin: _Optional[bytes] = ..., target_end: _Optional[bytes] = ..., cigar_ops: _Optional[bytes] = ..., cigar_offsets: _Optional[bytes] = ..., loc_begin: _Optional[bytes] = ..., loc_end: _Optional[bytes] = ..., loc_offsets: _Optional[bytes] = ..., n_pairs: _Optional[int] = ..., chunk: _Optional[int] = ..., stats: _Optional[_Union[CallStats, _Mapping]] = ...) -> None: ...
