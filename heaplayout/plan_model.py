"""What a plan is (docs/plan-format.md, version 1): its records as dataclasses, the limits
of the runtime's tables, and the error a refused plan raises. Reading and writing the text
is plan_format.py's; the PreFix records are plan_prefix.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .plan_prefix import PrefixRecords

PLAN_MAGIC = "heaplayout-plan"
PLAN_VERSION = 1
STRATEGIES = ("halo", "callsite", "hds", "prefix:hot", "prefix:hds", "prefix:hds+hot")
MIN_CHUNK = 256 * 1024
MAX_CHUNK = 64 * 1024 * 1024
MAX_OBJECT_SIZE = 32768
# Limits of the runtime's tables (runtime/src/plan_parse.h): a plan beyond them is refused.
MAX_MODULES = 64
MAX_SKIPS = 32
MAX_RULE_FRAMES = 16
MAX_GROUPS = 4093  # pool ids 3..4095 (HL_MAX_POOLS less the reserved ids 0, 1, 2)
MAX_RULES = 1 << 20
MAX_PATH_BYTES = 511
MAX_SKIP_NAME_BYTES = 127
MAX_BUILD_ID_BYTES = 64
MAX_OFFSET = (1 << 47) - 1  # x86-64 user addresses have 47 bits
MAX_U64 = (1 << 64) - 1

RESTS = ("allocator", "callsite")  # where ungrouped objects go

PlanFrame = tuple[int, int]  # (module index, return-address offset)


@dataclass(frozen=True)
class PlanModule:
    index: int
    build_id: str | None  # lowercase hex, None when the file has none ("-")
    path: str


@dataclass(frozen=True)
class PlanGroup:
    id: int
    contexts: int  # informational
    weight: int  # informational
    packed: bool = False  # with min_align 8: 24-byte objects take 24-byte slots (docs/plan-format.md)
    spans: bool = False  # fresh space carved per size class instead of HALO's allocation order
    line: int = 0  # bytes into a cache line its fresh space starts: 0, 16, 32 or 48 (docs/plan-format.md)


@dataclass(frozen=True)
class SelectRule:
    group: int  # 1..len(groups); 0 = ungrouped (a longer chain sent back to the allocator)
    frames: tuple[PlanFrame, ...]  # innermost first


@dataclass
class Plan:
    strategy: str
    chunk_size: int = 1 << 20
    max_object_size: int = 4096
    # where ungrouped objects go: "allocator" (the allocator underneath, as HALO) or
    # "callsite" (per-site pools for objects up to rest_max_size, the callsite policy)
    rest: str = "allocator"
    rest_max_size: int = 0
    # 8: the groups' objects whose size is an odd multiple of 8 may be 8-aligned (HALO 5)
    min_align: int = 16
    # `recursion function`: rules were written over chains that keep one frame per function
    recursion_function: bool = False
    modules: list[PlanModule] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)
    groups: list[PlanGroup] = field(default_factory=list)
    rules: list[SelectRule] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)  # written after the first line
    version: int = PLAN_VERSION
    prefix: PrefixRecords = field(default_factory=PrefixRecords)  # plan_prefix.py: the PreFix region


class PlanError(ValueError):
    """A plan file that the runtime would refuse; the message says where and why.

    `reason` and `line` (0: the file as a whole) are what the runtime reports for the same
    file: `runtime_message` gives its whole line."""

    def __init__(self, message: str, reason: str | None = None, line: int = 0) -> None:
        super().__init__(message)
        self.reason = message if reason is None else reason
        self.line = line

    def runtime_message(self, path: str | Path) -> str:
        where = f"plan {path} line {self.line}" if self.line else f"plan {path}"
        return f"heaplayout: {where}: {self.reason}; running unoptimized"


def format_frame(frame: PlanFrame) -> str:
    return f"{frame[0]}:0x{frame[1]:x}"
