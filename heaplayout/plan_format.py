"""The plan file (docs/plan-format.md, version 1): dataclasses, writer and validating reader.

The C runtime parses the same text; this reader is as strict as the runtime should be, so a
plan that passes `read_plan` is one the runtime accepts (apart from the build-id check
against the loaded modules, which only the runtime can do).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PLAN_MAGIC = "heaplayout-plan"
PLAN_VERSION = 1
STRATEGIES = ("halo", "callsite", "hds")
MIN_CHUNK = 256 * 1024
MAX_CHUNK = 64 * 1024 * 1024
MAX_OBJECT_SIZE = 32768
# Limits of the runtime's parser (runtime/src/plan.c, tunables.h): a plan beyond them is refused.
MAX_MODULES = 64
MAX_SKIPS = 32
MAX_RULE_FRAMES = 16
MAX_GROUPS = 4095

# The order records must come in; each record type may repeat only where the doc allows.
_ORDER = ("heaplayout-plan", "strategy", "chunk_size", "max_object_size", "min_align", "rest", "module", "skip", "group",
          "select", "end")
_REPEATABLE = {"module", "skip", "group", "select"}
_OPTIONAL = {"rest", "min_align"}  # at most once; absent: "rest allocator", "min_align 16"
RESTS = ("allocator", "callsite")
_BUILD_ID = re.compile(r"^(-|[0-9a-f]+)$")

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
    modules: list[PlanModule] = field(default_factory=list)
    skips: list[str] = field(default_factory=list)
    groups: list[PlanGroup] = field(default_factory=list)
    rules: list[SelectRule] = field(default_factory=list)
    comments: list[str] = field(default_factory=list)  # written after the first line
    version: int = PLAN_VERSION


class PlanError(ValueError):
    """A plan file that the runtime would refuse; the message says where and why."""


def format_frame(frame: PlanFrame) -> str:
    return f"{frame[0]}:0x{frame[1]:x}"


def validate_plan(plan: Plan) -> None:
    """Raise PlanError for anything docs/plan-format.md does not allow."""
    if plan.version != PLAN_VERSION:
        raise PlanError(f"plan version {plan.version}: only version {PLAN_VERSION} exists")
    if plan.strategy not in STRATEGIES:
        raise PlanError(f"strategy {plan.strategy!r}: expected one of {', '.join(STRATEGIES)}")
    if not (MIN_CHUNK <= plan.chunk_size <= MAX_CHUNK) or plan.chunk_size & (plan.chunk_size - 1):
        raise PlanError(f"chunk_size {plan.chunk_size}: must be a power of two from 256K to 64M")
    if not (0 < plan.max_object_size <= MAX_OBJECT_SIZE):
        raise PlanError(f"max_object_size {plan.max_object_size}: must be 1..{MAX_OBJECT_SIZE}")
    if plan.min_align not in (8, 16):
        raise PlanError(f"min_align {plan.min_align}: must be 8 or 16")
    if plan.rest not in RESTS:
        raise PlanError(f"rest {plan.rest!r}: expected one of {', '.join(RESTS)}")
    if plan.rest == "callsite" and not (0 < plan.rest_max_size <= MAX_OBJECT_SIZE):
        raise PlanError(f"rest callsite {plan.rest_max_size}: the size limit must be 1..{MAX_OBJECT_SIZE}")
    if len(plan.modules) > MAX_MODULES or len(plan.skips) > MAX_SKIPS or len(plan.groups) > MAX_GROUPS:
        raise PlanError(f"{len(plan.modules)} modules, {len(plan.skips)} skips, {len(plan.groups)} groups: the "
                        f"runtime takes at most {MAX_MODULES}, {MAX_SKIPS} and {MAX_GROUPS}")
    for i, m in enumerate(plan.modules):
        if m.index != i:
            raise PlanError(f"module index {m.index}: module indexes must be 0, 1, 2, ... in order")
        if m.build_id is not None and (not m.build_id or not _BUILD_ID.match(m.build_id) or m.build_id == "-"):
            raise PlanError(f"module {m.index}: build-id {m.build_id!r} is not lowercase hex")
        if not m.path or "\n" in m.path or m.path != m.path.strip():
            raise PlanError(f"module {m.index}: bad path {m.path!r}")
    for s in plan.skips:
        if not s or any(ch.isspace() for ch in s):
            raise PlanError(f"skip {s!r}: must be one word")
    for i, g in enumerate(plan.groups, start=1):
        if g.id != i:
            raise PlanError(f"group id {g.id}: group ids must be 1, 2, 3, ... in order")
        if g.contexts < 0 or g.weight < 0:
            raise PlanError(f"group {g.id}: negative count")
    seen: dict[tuple[PlanFrame, ...], int] = {}
    for r in plan.rules:
        if not (0 <= r.group <= len(plan.groups)):
            raise PlanError(f"select {r.group}: no such group (groups are 1..{len(plan.groups)}, 0 = ungrouped)")
        if not r.frames:
            raise PlanError(f"select {r.group}: a rule needs at least one frame")
        if len(r.frames) > MAX_RULE_FRAMES:
            raise PlanError(f"select {r.group}: {len(r.frames)} frames, the runtime takes at most {MAX_RULE_FRAMES}")
        for m, off in r.frames:
            if not (0 <= m < len(plan.modules)):
                raise PlanError(f"select {r.group} {format_frame((m, off))}: no module {m}")
            if off < 0:
                raise PlanError(f"select {r.group}: negative offset")
        if r.frames in seen:
            raise PlanError(f"select {' '.join(map(format_frame, r.frames))}: chain given twice "
                            f"(groups {seen[r.frames]} and {r.group})")
        seen[r.frames] = r.group


def plan_text(plan: Plan) -> str:
    validate_plan(plan)
    lines = [f"{PLAN_MAGIC} {plan.version}"]
    lines += [f"# {c}" for c in plan.comments]
    lines.append(f"strategy {plan.strategy}")
    lines.append(f"chunk_size {plan.chunk_size}")
    lines.append(f"max_object_size {plan.max_object_size}")
    if plan.min_align != 16:
        lines.append(f"min_align {plan.min_align}")
    if plan.rest == "callsite":
        lines.append(f"rest callsite {plan.rest_max_size}")
    lines += [f"module {m.index} {m.build_id or '-'} {m.path}" for m in plan.modules]
    lines += [f"skip {s}" for s in plan.skips]
    lines += [f"group {g.id} {g.contexts} {g.weight}{' packed' if g.packed else ''}" for g in plan.groups]
    lines += [f"select {r.group} {' '.join(map(format_frame, r.frames))}" for r in plan.rules]
    lines.append("end")
    return "\n".join(lines) + "\n"


def write_plan(plan: Plan, path: str | Path) -> None:
    """Validate and write; the file appears complete or not at all (write, then rename)."""
    path = Path(path)
    text = plan_text(plan)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _number(text: str, what: str) -> int:
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        raise PlanError(f"{what}: {text!r} is not a number") from None


def _frame(text: str) -> PlanFrame:
    """'module:offset': the module index in decimal, the offset always hex, '0x' optional
    (as the runtime parses it; the writer always writes '0x')."""
    module, sep, offset = text.partition(":")
    if not sep or not offset:
        raise PlanError(f"frame {text!r}: expected module:0xOFFSET")
    digits = offset[2:] if offset.lower().startswith("0x") else offset
    try:
        value = int(digits, 16)
    except ValueError:
        raise PlanError(f"frame offset: {offset!r} is not hex") from None
    if digits.startswith(("+", "-")) or "_" in digits:
        raise PlanError(f"frame offset: {offset!r} is not hex")
    return _number(module, "frame module"), value


def parse_plan(text: str, name: str = "<plan>") -> Plan:
    """Parse and validate plan text; every error names the file and line."""
    plan: Plan | None = None
    last = -1  # index in _ORDER of the previous record
    ended = False
    lines = text.split("\n")
    if text and not text.endswith("\n"):
        raise PlanError(f"{name}: truncated (the last line has no newline)")
    for lineno, raw in enumerate(lines[:-1] if text.endswith("\n") else lines, start=1):
        where = f"{name}:{lineno}"
        line = raw.rstrip("\r")
        if lineno == 1 and line.split(" ")[0] != PLAN_MAGIC:
            raise PlanError(f"{where}: not a plan (the first line must be '{PLAN_MAGIC} {PLAN_VERSION}')")
        if line.startswith("#"):
            if plan is not None:
                plan.comments.append(line[1:].strip())
            continue
        if not line.strip():
            continue
        if ended:
            raise PlanError(f"{where}: text after 'end'")
        if line != line.strip() or "  " in line:
            raise PlanError(f"{where}: fields must be separated by single spaces: {line!r}")
        kind, _, rest = line.partition(" ")
        fields = rest.split(" ") if rest else []
        if kind not in _ORDER:
            raise PlanError(f"{where}: unknown record {kind!r}")
        pos = _ORDER.index(kind)
        if plan is None and kind != PLAN_MAGIC:
            raise PlanError(f"{where}: not a plan (the first line must be '{PLAN_MAGIC} {PLAN_VERSION}')")
        if pos < last or (pos == last and kind not in _REPEATABLE):
            raise PlanError(f"{where}: record {kind!r} out of order (order: {', '.join(_ORDER)})")
        skippable = _REPEATABLE | _OPTIONAL
        if pos > last + 1 and any(_ORDER[i] not in skippable for i in range(last + 1, pos)):
            missing = next(_ORDER[i] for i in range(last + 1, pos) if _ORDER[i] not in skippable)
            raise PlanError(f"{where}: record {missing!r} missing before {kind!r}")
        last = pos
        try:
            if kind == PLAN_MAGIC:
                if fields != [str(PLAN_VERSION)]:
                    raise PlanError(f"{where}: plan version {' '.join(fields) or '(none)'}; "
                                    f"this reader knows version {PLAN_VERSION}")
                plan = Plan(strategy="halo")
            elif plan is None:
                raise AssertionError("unreachable: order check")
            elif kind == "strategy":
                _arity(fields, 1, where, kind)
                plan.strategy = fields[0]
            elif kind == "chunk_size":
                _arity(fields, 1, where, kind)
                plan.chunk_size = _number(fields[0], f"{where}: chunk_size")
            elif kind == "max_object_size":
                _arity(fields, 1, where, kind)
                plan.max_object_size = _number(fields[0], f"{where}: max_object_size")
            elif kind == "min_align":
                _arity(fields, 1, where, kind)
                plan.min_align = _number(fields[0], f"{where}: min_align")
            elif kind == "rest":
                if fields == ["allocator"]:
                    plan.rest, plan.rest_max_size = "allocator", 0
                elif len(fields) == 2 and fields[0] == "callsite":
                    plan.rest, plan.rest_max_size = "callsite", _number(fields[1], f"{where}: rest callsite")
                else:
                    raise PlanError(f"{where}: rest is 'allocator' or 'callsite MAX_SIZE', got {rest!r}")
            elif kind == "module":
                if len(fields) < 3:
                    raise PlanError(f"{where}: module needs index, build-id and path")
                build_id = None if fields[1] == "-" else fields[1]
                # the path is the rest of the line: it may contain spaces
                plan.modules.append(PlanModule(_number(fields[0], f"{where}: module index"), build_id,
                                               rest.split(" ", 2)[2]))
            elif kind == "skip":
                _arity(fields, 1, where, kind)
                plan.skips.append(fields[0])
            elif kind == "group":
                packed = len(fields) == 4 and fields[3] == "packed"
                if packed:
                    fields = fields[:3]
                _arity(fields, 3, where, kind)
                plan.groups.append(PlanGroup(*(_number(f, f"{where}: group") for f in fields), packed=packed))
            elif kind == "select":
                if len(fields) < 2:
                    raise PlanError(f"{where}: select needs a group and at least one frame")
                plan.rules.append(SelectRule(_number(fields[0], f"{where}: select group"),
                                             tuple(_frame(f) for f in fields[1:])))
            elif kind == "end":
                _arity(fields, 0, where, kind)
                ended = True
        except PlanError as err:
            msg = str(err)
            raise PlanError(msg if msg.startswith(name) else f"{where}: {msg}") from None
    if plan is None:
        raise PlanError(f"{name}: empty file, not a plan")
    if not ended:
        raise PlanError(f"{name}: truncated (no 'end' record)")
    try:
        validate_plan(plan)
    except PlanError as err:
        raise PlanError(f"{name}: {err}") from None
    return plan


def _arity(fields: list[str], n: int, where: str, kind: str) -> None:
    if len(fields) != n:
        raise PlanError(f"{where}: {kind} takes {n} field{'s' if n != 1 else ''}, got {len(fields)}")


def read_plan(path: str | Path) -> Plan:
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise PlanError(f"{path}: cannot read: {err.strerror or err}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PlanError(f"{path}: not UTF-8 text (byte {err.start})") from None
    return parse_plan(text, str(path))
