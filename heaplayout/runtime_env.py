"""The environment that makes a program run under libheaplayout.so.

This is the one place that knows the runtime's environment variables (the C side reads
them in runtime/src/options.c; docs/runtime.md documents both). Every command that runs a
program under the runtime (run, bench, later profile/simulate with --policy) builds its
environment here, and `heaplayout run --print-env` prints exactly this mapping.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from . import allocators, paths
from .plan_format import plan_file_problem

POLICIES = ("off", "callsite", "plan", "dpa")

# option name used on the command line -> environment variable read by the runtime
OPTION_VARIABLES: dict[str, str] = {
    "min_objects": "HEAPLAYOUT_MIN_OBJECTS",  # DPA 3.3.1: a context is pooled after this many objects
    "max_size": "HEAPLAYOUT_MAX_SIZE",  # DPA 3.3.2: only objects up to this size are pooled
    "chunk_size": "HEAPLAYOUT_CHUNK_SIZE",  # HALO 5: 1 MiB chunks
    "range": "HEAPLAYOUT_RANGE",  # reserved virtual range for all pools
    "cc_block": "HEAPLAYOUT_CC_BLOCK",  # ccmalloc's cc-block size
    "chunk_colors": "HEAPLAYOUT_CHUNK_COLORS",  # start offsets new chunks cycle through (1 = off)
    "spare_chunks": "HEAPLAYOUT_SPARE_CHUNKS",  # empty chunks kept resident (HALO 5 keeps 1)
    "span_bytes": "HEAPLAYOUT_SPAN_BYTES",  # fresh space per size class comes in spans of this size
    "min_align": "HEAPLAYOUT_MIN_ALIGN",  # 8 or 16; unset: the plan's min_align (HALO 5 uses 8)
    "huge_pages": "HEAPLAYOUT_HUGE_PAGES",  # 1: pools (and the allocator underneath) on transparent huge pages
}

# The runtime's defaults, as help texts show them: runtime/src/tunables.h is where they are
# set (tests/test_runtime_options.py fails when the two differ).
OPTION_DEFAULTS: dict[str, str] = {
    "min_objects": "100",  # HL_DEFAULT_MIN_OBJECTS
    "max_size": "128",  # HL_DEFAULT_MAX_SIZE
    "chunk_size": "1M",  # HL_DEFAULT_CHUNK_SIZE
    "range": "16G",  # HL_DEFAULT_RANGE
    "cc_block": "256",  # HL_DEFAULT_CC_BLOCK
    "chunk_colors": "64",  # HL_CHUNK_COLORS
    "spare_chunks": "8",  # HL_SPARE_CHUNKS
    "span_bytes": "16K",  # HL_SPAN_BYTES
    "huge_pages": "0",  # HL_DEFAULT_HUGE_PAGES
}


# The ranges the runtime accepts (runtime/src/options.c, from runtime/src/tunables.h: a test
# runs the runtime on each bound): (lowest, highest, must be a power of two). A value out of
# range is refused here, before the program runs, instead of the runtime's "running
# unoptimized" at start.
OPTION_RANGES: dict[str, tuple[int, int, bool]] = {
    "min_objects": (0, 1_000_000_000, False),
    "max_size": (1, 32 << 10, False),  # HL_MAX_CLASS_SIZE
    "chunk_size": (256 << 10, 64 << 20, True),  # HL_MIN_CHUNK_SIZE, HL_MAX_CHUNK_SIZE
    "range": (64 << 20, 1 << 40, False),
    "cc_block": (64, 2048, True),  # HL_MIN_CC_BLOCK, HL_MAX_CC_BLOCK
    "chunk_colors": (1, 64, False),  # HL_CHUNK_COLORS
    "spare_chunks": (0, 4096, False),  # HL_MAX_SPARE_CHUNKS
    "span_bytes": (256, 1 << 20, False),  # HL_MIN_SPAN_BYTES, HL_MAX_SPAN_BYTES
    "min_align": (8, 16, True),
    "huge_pages": (0, 1, False),
}
_SIZE_UNITS = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}


def parse_size(text: str) -> int | None:
    """"123", "64K", "1M", "16G", "1T" (also "64KiB", "64KB", "100B"), as the runtime reads
    them (options.c, parse_size); None when it is not one."""
    import re
    m = re.fullmatch(r"(\d+)([kKmMgGtT]?)(iB|B)?", text)
    if m is None or (m.group(3) == "iB" and not m.group(2)):
        return None
    return int(m.group(1)) << _SIZE_UNITS[m.group(2).upper()]


def _size_text(v: int) -> str:
    for unit, shift in (("T", 40), ("G", 30), ("M", 20), ("K", 10)):
        if v >= 1 << shift and v % (1 << shift) == 0:
            return f"{v >> shift}{unit}"
    return str(v)


def option_problem(name: str, value: str) -> str | None:
    """Why the runtime would refuse `value` for option `name`, or None."""
    lo, hi, pow2 = OPTION_RANGES[name]
    v = parse_size(value)
    if v is None:
        return f"{value!r} is not a number or size (examples: 100, 4K, 1M, 16G)"
    if not lo <= v <= hi or (pow2 and v & (v - 1)):
        return f"{value} is out of range: {_size_text(lo)} to {_size_text(hi)}{', a power of two' if pow2 else ''}"
    return None


@dataclass(frozen=True)
class RuntimeConfig:
    """What a run under the runtime should use. Empty options keep the runtime's defaults."""

    policy: str = "off"
    allocator: str = "glibc"  # the allocator underneath ours
    options: dict[str, str] = field(default_factory=dict)
    stats: bool = False
    stats_json: str | None = None
    plan: str | None = None  # plan file, for policy "plan"


def preload_value(allocator: str, with_runtime: bool) -> str:
    """LD_PRELOAD for `allocator`, with our runtime first when `with_runtime`."""
    libs: list[str] = []
    if with_runtime:
        libs.append(str(paths.runtime_library()))
    lib = allocators.allocator_library(allocator)
    if lib is not None:
        libs.append(str(lib))
    return ":".join(libs)


def runtime_env(config: RuntimeConfig) -> dict[str, str]:
    """The variables to add to a program's environment (nothing else is changed)."""
    if config.policy not in POLICIES:
        raise ValueError(f"unknown policy {config.policy!r}; choose one of: {', '.join(POLICIES)}")
    if config.policy == "plan" and not config.plan:
        raise ValueError("policy 'plan' needs a plan file (heaplayout plan writes one)")
    env = {"LD_PRELOAD": preload_value(config.allocator, with_runtime=True), "HEAPLAYOUT_POLICY": config.policy}
    if config.plan:
        if config.policy != "plan":
            raise ValueError(f"a plan file is only used by policy 'plan', not {config.policy!r}")
        plan = Path(config.plan)
        if not plan.exists() and not plan.is_symlink():
            raise ValueError(f"plan file not found: {plan}")
        problem = plan_file_problem(plan)  # a directory, a FIFO or pipe, a device: named as such
        if problem is not None:
            raise ValueError(f"plan {plan}: {problem}")
        env["HEAPLAYOUT_PLAN"] = str(plan.resolve())
    for name, value in config.options.items():
        if name not in OPTION_VARIABLES:
            raise ValueError(f"unknown runtime option {name!r}; known: {', '.join(OPTION_VARIABLES)}")
        value = str(value)
        if not value or any(ch.isspace() for ch in value):
            raise ValueError(f"runtime option {name}={value!r} must be a non-empty value without spaces")
        problem = option_problem(name, value)
        if problem:
            raise ValueError(f"--{name.replace('_', '-')} {problem}")
        env[OPTION_VARIABLES[name]] = value
    chunk, rng = config.options.get("chunk_size"), config.options.get("range")
    if chunk or rng:  # options.c: the range holds at least 16 chunks
        c, r = parse_size(str(chunk or OPTION_DEFAULTS["chunk_size"])), parse_size(str(rng or OPTION_DEFAULTS["range"]))
        if c and r and r < 16 * c:
            raise ValueError(f"--range {rng or OPTION_DEFAULTS['range']} must hold at least 16 chunks of "
                             f"--chunk-size {chunk or OPTION_DEFAULTS['chunk_size']}")
    if huge_pages_on(config.options):  # the allocator underneath too, where it has a setting
        if config.allocator in allocators.HUGE_PAGE_SETTINGS:
            env.update(allocators.huge_page_env(config.allocator))
    if config.stats:
        env["HEAPLAYOUT_STATS"] = "1"
    if config.stats_json:
        env["HEAPLAYOUT_STATS_JSON"] = config.stats_json
    return env


def huge_pages_on(options: dict[str, str]) -> bool:
    """Whether options (already checked by option_problem) ask for huge pages."""
    return parse_size(str(options.get("huge_pages", "0"))) == 1


def for_program(env: dict[str, str], program: str, target: str | None = None) -> dict[str, str]:
    """`env` limited to `program`: when it runs the runtime and `program` is an ELF
    executable, HEAPLAYOUT_PROGRAM names it, and every other process that inherits the
    environment (valgrind's launcher, a wrapper, the program's children) runs unoptimized
    without a word. A script is left alone: the binary it starts is the one to optimize.
    `target` (a census's answer, or --program) names that binary instead of `program`."""
    if "HEAPLAYOUT_POLICY" not in env:
        return env
    if target:
        return {**env, "HEAPLAYOUT_PROGRAM": os.path.abspath(target)}
    path = program if os.sep in program else shutil.which(program)
    if not path:
        return env
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return env
    except OSError:
        return env
    return {**env, "HEAPLAYOUT_PROGRAM": os.path.abspath(path)}


def allocator_env(allocator: str, huge_pages: bool = False) -> dict[str, str]:
    """The variables for running under a plain allocator (no heaplayout runtime), with its
    own huge-page setting when `huge_pages` (ValueError if it has none)."""
    preload = preload_value(allocator, with_runtime=False)
    env = {"LD_PRELOAD": preload} if preload else {}
    if huge_pages:
        env.update(allocators.huge_page_env(allocator))
    return env
