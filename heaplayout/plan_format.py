"""The plan file (docs/plan-format.md, version 1): its writer and validating reader. What a
plan holds (the dataclasses, the limits, PlanError) is plan_model.py's; its names are
imported here, so `from heaplayout.plan_format import Plan, read_plan` keeps working.

The C runtime parses the same text with runtime/src/plan_parse.c. This reader is its twin:
the same checks in the same order with the same messages, so a plan `read_plan` accepts is
one the runtime accepts (apart from the build-id check against the loaded modules, which
only the runtime can do), and a plan it refuses is refused by the runtime with the same
line and reason. tests/data/plan_conformance/ holds the cases both must agree on.
"""

from __future__ import annotations

import contextlib

import os
import re
import stat
from pathlib import Path

from . import plan_prefix
from .plan_model import (MAX_BUILD_ID_BYTES, MAX_CHUNK, MAX_GROUPS, MAX_MODULES, MAX_OBJECT_SIZE, MAX_OFFSET,
                         MAX_PATH_BYTES, MAX_RULE_FRAMES, MAX_RULES, MAX_SKIP_NAME_BYTES, MAX_SKIPS, MAX_U64, MIN_CHUNK,
                         PLAN_MAGIC, PLAN_VERSION, RESTS, STRATEGIES, Plan, PlanError, PlanFrame, PlanGroup, PlanModule,
                         SelectRule, format_frame)

# The order records must come in; each record type may repeat only where the doc allows.
_ORDER = ("heaplayout-plan", "strategy", "chunk_size", "max_object_size", "min_align", "rest", "recursion", "module",
          "skip", "group", "select", "prefix_region", "prefix_counter", "prefix_site", "prefix_select", "prefix_slot",
          "end")
_REPEATABLE = {"module", "skip", "group", "select", "prefix_counter", "prefix_site", "prefix_select", "prefix_slot"}
_OPTIONAL = {"rest", "min_align", "recursion", "prefix_region"}  # prefix_region: unless a PreFix record follows  # at most once; absent: "rest allocator", "min_align 16", no collapsing
_BUILD_ID = re.compile(r"(?:[0-9a-f]{2}){1,64}")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")
_HEX = re.compile(r"[0-9a-fA-F]+")
_SHOW_MAX = 40

def _nbytes(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _has_control(text: str) -> bool:
    return any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text)


def validate_plan(plan: Plan) -> None:
    """Raise PlanError for anything docs/plan-format.md does not allow (what the writer
    writes, the reader reads back unchanged)."""
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
    if plan.rest == "allocator" and plan.rest_max_size:
        raise PlanError("rest allocator takes no size limit")
    if (len(plan.modules) > MAX_MODULES or len(plan.skips) > MAX_SKIPS or len(plan.groups) > MAX_GROUPS
            or len(plan.rules) > MAX_RULES):
        raise PlanError(f"{len(plan.modules)} modules, {len(plan.skips)} skips, {len(plan.groups)} groups, "
                        f"{len(plan.rules)} rules: the runtime takes at most {MAX_MODULES}, {MAX_SKIPS}, "
                        f"{MAX_GROUPS} and {MAX_RULES}")
    for c in plan.comments:
        if _has_control(c):
            raise PlanError(f"comment {c!r}: no control characters or newlines")
    for i, m in enumerate(plan.modules):
        if m.index != i:
            raise PlanError(f"module index {m.index}: module indexes must be 0, 1, 2, ... in order")
        if m.build_id is not None and not _BUILD_ID.fullmatch(m.build_id):
            raise PlanError(f"module {m.index}: build-id {m.build_id!r} is not lowercase hex of 1 to "
                            f"{MAX_BUILD_ID_BYTES} bytes")
        if (not m.path or _has_control(m.path) or m.path != m.path.strip(" ") or "  " in m.path
                or _nbytes(m.path) > MAX_PATH_BYTES):
            raise PlanError(f"module {m.index}: bad path {m.path!r} (one line of at most {MAX_PATH_BYTES} bytes, "
                            "single spaces, none at either end)")
    for s in plan.skips:
        if not s or " " in s or _has_control(s) or _nbytes(s) > MAX_SKIP_NAME_BYTES:
            raise PlanError(f"skip {s!r}: must be one word of at most {MAX_SKIP_NAME_BYTES} bytes")
    for i, g in enumerate(plan.groups, start=1):
        if g.id != i:
            raise PlanError(f"group id {g.id}: group ids must be 1, 2, 3, ... in order")
        if not (0 <= g.contexts <= MAX_U64 and 0 <= g.weight <= MAX_U64):
            raise PlanError(f"group {g.id}: counts must be 0..2^64-1")
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
            if not (0 <= off <= MAX_OFFSET):
                raise PlanError(f"select {r.group}: offset {off:#x} out of range (at most {MAX_OFFSET:#x})")
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
    if plan.recursion_function:
        lines.append("recursion function")
    lines += [f"module {m.index} {m.build_id or '-'} {m.path}" for m in plan.modules]
    lines += [f"skip {s}" for s in plan.skips]
    lines += [f"group {g.id} {g.contexts} {g.weight}{' packed' if g.packed else ''}{' spans' if g.spans else ''}"
              f"{f' line {g.line}' if g.line else ''}" for g in plan.groups]
    lines += [f"select {r.group} {' '.join(map(format_frame, r.frames))}" for r in plan.rules]
    lines += plan.prefix.lines()
    lines.append("end")
    text = "\n".join(lines) + "\n"
    if plan.prefix.region_bytes:  # the PreFix records are checked by the reader itself
        parse_plan_bytes(text.encode("utf-8"), "<written plan>")
    return text


def write_plan(plan: Plan, path: str | Path) -> None:
    """Validate and write; the file appears complete or not at all (write, then rename)."""
    path = Path(path)
    text = plan_text(plan)
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)
    except OSError as err:
        # name the file the user gave, not the hidden temporary one ('x.plan.tmp': no such file)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(err.errno, err.strerror, str(path)) from err


# ---- the reader: runtime/src/plan_parse.c, check for check ---------------------------------

class _Refused(Exception):
    """A check failed: the line (0: the whole file) and the reason, as the runtime gives them."""

    def __init__(self, line: int, reason: str) -> None:
        super().__init__(reason)
        self.line = line
        self.reason = reason


def _show(text: str) -> str:
    """A field as messages quote it: itself when short printable ASCII, else its length."""
    n = _nbytes(text)
    if 1 <= n <= _SHOW_MAX and all(0x20 < ord(ch) < 0x7F for ch in text):
        return text
    return f"({n} bytes)"


def _number(text: str) -> int | None:
    """Decimal, or hex written 0x...; None when not a number; a value past 2^64 - 1 comes back
    as MAX_U64 + 1 (out of every field's range)."""
    if not _NUMBER.fullmatch(text):
        return None
    if text[:2] in ("0x", "0X"):
        return min(int(text[2:], 16), MAX_U64 + 1)
    digits = text.lstrip("0") or "0"
    return MAX_U64 + 1 if len(digits) > 20 else min(int(digits), MAX_U64 + 1)


def _hex_offset(text: str) -> int | None:
    if len(text) > 2 and text[:2] in ("0x", "0X"):
        text = text[2:]
    if not _HEX.fullmatch(text):
        return None
    return min(int(text, 16), MAX_U64 + 1)


def _bounded(line: int, what: str, text: str, lo: int, hi: int, allowed: str) -> int:
    value = _number(text)
    if value is None:
        raise _Refused(line, f"{what}: '{_show(text)}' is not a number")
    if not lo <= value <= hi:
        raise _Refused(line, f"{what} {_show(text)}: {allowed}")
    return value


def _arity(line: int, kind: str, fields: list[str], n: int) -> None:
    if len(fields) != n:
        raise _Refused(line, f"{kind} takes {n} field{'' if n == 1 else 's'}, got {len(fields)}")


def _select(line: int, rest: str, plan: Plan, prefix: bool = False) -> SelectRule:
    """select, or (prefix) prefix_select, whose label is a PreFix site instead of a group."""
    name, label = ("prefix_select", "site") if prefix else ("select", "group")
    fields = rest.split(" ") if rest else []
    if len(fields) < 2:
        raise _Refused(line, f"{name} needs a {label} and at least one frame")
    group = _number(fields[0])
    if group is None:
        raise _Refused(line, f"{name} {label}: '{_show(fields[0])}' is not a number")
    if prefix and group > len(plan.prefix.sites):
        raise _Refused(line, f"prefix_select {_show(fields[0])}: no such site (sites are 1..{len(plan.prefix.sites)}, "
                       "0 = no site)")
    if not prefix and group > len(plan.groups):
        raise _Refused(line, f"select {_show(fields[0])}: no such group (groups are 1..{len(plan.groups)}, "
                       "0 = ungrouped)")
    if len(fields) - 1 > MAX_RULE_FRAMES:
        raise _Refused(line, f"{name} has {len(fields) - 1} frames, the runtime takes at most {MAX_RULE_FRAMES}")
    if len(plan.prefix.rules if prefix else plan.rules) == MAX_RULES:
        raise _Refused(line, f"too many {name} records (the runtime takes at most {MAX_RULES})")
    frames = []
    for text in fields[1:]:
        module_text, colon, offset_text = text.partition(":")
        if not colon or not offset_text:
            raise _Refused(line, f"frame '{_show(text)}': expected module:0xOFFSET")
        module = _number(module_text)
        if module is None:
            raise _Refused(line, f"frame module: '{_show(module_text)}' is not a number")
        if module >= len(plan.modules):
            raise _Refused(line, f"{name} frame {_show(text)}: no module {_show(module_text)}")
        offset = _hex_offset(offset_text)
        if offset is None:
            raise _Refused(line, f"frame offset: '{_show(offset_text)}' is not hex")
        if offset > MAX_OFFSET:
            raise _Refused(line, f"frame offset {_show(offset_text)}: out of range (at most {MAX_OFFSET:#x})")
        frames.append((module, offset))
    return SelectRule(group, tuple(frames))


def _record(line: int, kind: str, rest: str, plan: Plan, prefix_state: dict) -> None:
    fields = rest.split(" ") if rest else []
    if kind.startswith("prefix_"):
        _prefix_record(line, kind, rest, fields, plan, prefix_state)
    elif kind == "strategy":
        _arity(line, kind, fields, 1)
        if fields[0] not in STRATEGIES:
            raise _Refused(line, f"strategy '{_show(fields[0])}': expected one of {', '.join(STRATEGIES)}")
        plan.strategy = fields[0]
    elif kind == "chunk_size":
        _arity(line, kind, fields, 1)
        pow2 = "must be a power of two from 256K to 64M"
        plan.chunk_size = _bounded(line, "chunk_size", fields[0], MIN_CHUNK, MAX_CHUNK, pow2)
        if plan.chunk_size & (plan.chunk_size - 1):
            raise _Refused(line, f"chunk_size {_show(fields[0])}: {pow2}")
    elif kind == "max_object_size":
        _arity(line, kind, fields, 1)
        plan.max_object_size = _bounded(line, "max_object_size", fields[0], 1, MAX_OBJECT_SIZE,
                                        f"must be 1..{MAX_OBJECT_SIZE}")
    elif kind == "min_align":
        _arity(line, kind, fields, 1)
        plan.min_align = _bounded(line, "min_align", fields[0], 8, 16, "must be 8 or 16")
        if plan.min_align not in (8, 16):
            raise _Refused(line, f"min_align {_show(fields[0])}: must be 8 or 16")
    elif kind == "rest":
        if fields == ["allocator"]:
            plan.rest, plan.rest_max_size = "allocator", 0
            return
        if len(fields) != 2 or fields[0] != "callsite":
            raise _Refused(line, "rest is 'allocator' or 'callsite MAX_SIZE'")
        plan.rest = "callsite"
        plan.rest_max_size = _bounded(line, "rest callsite", fields[1], 1, MAX_OBJECT_SIZE,
                                      f"the size limit must be 1..{MAX_OBJECT_SIZE}")
    elif kind == "recursion":
        _arity(line, kind, fields, 1)
        if fields[0] != "function":
            raise _Refused(line, f"recursion '{_show(fields[0])}': expected function")
        plan.recursion_function = True
    elif kind == "module":
        if len(fields) < 3:
            raise _Refused(line, "module needs index, build-id and path")
        n = len(plan.modules)
        _bounded(line, "module index", fields[0], n, n, "module indexes must be 0, 1, 2, ... in order")
        if n == MAX_MODULES:
            raise _Refused(line, f"too many modules (the runtime takes at most {MAX_MODULES})")
        if fields[1] != "-" and not _BUILD_ID.fullmatch(fields[1]):
            raise _Refused(line, f"module {n}: build-id is not lowercase hex of 1 to {MAX_BUILD_ID_BYTES} bytes")
        path = rest.split(" ", 2)[2]  # the rest of the line: it may hold single spaces
        if _nbytes(path) > MAX_PATH_BYTES:
            raise _Refused(line, f"module {n}: path longer than {MAX_PATH_BYTES} bytes")
        plan.modules.append(PlanModule(n, None if fields[1] == "-" else fields[1], path))
    elif kind == "skip":
        _arity(line, kind, fields, 1)
        if _nbytes(fields[0]) > MAX_SKIP_NAME_BYTES:
            raise _Refused(line, f"skip name longer than {MAX_SKIP_NAME_BYTES} bytes")
        if len(plan.skips) == MAX_SKIPS:
            raise _Refused(line, f"too many skip records (the runtime takes at most {MAX_SKIPS})")
        plan.skips.append(fields[0])
    elif kind == "group":
        # optional flags after the weight, each at most once, in this order: packed, spans,
        # line N
        flag = 3
        packed = flag < len(fields) and fields[flag] == "packed"
        flag += packed
        spans = flag < len(fields) and fields[flag] == "spans"
        flag += spans
        has_line = flag + 1 < len(fields) and fields[flag] == "line"
        if not 3 <= len(fields) <= 7:
            raise _Refused(line, "group takes 3 fields (and the optional flags 'packed', 'spans' and 'line N'), "
                                 f"got {len(fields)}")
        line_off = 0
        if has_line:
            line_off = _bounded(line, "group line", fields[flag + 1], 16, 48, "must be 16, 32 or 48")
            if line_off % 16:
                raise _Refused(line, f"group line {_show(fields[flag + 1])}: must be 16, 32 or 48")
            flag += 2
        if flag != len(fields):
            raise _Refused(line, "group: after the weight only 'packed', then 'spans', then 'line N' may follow")
        n = len(plan.groups) + 1
        _bounded(line, "group id", fields[0], n, n, "group ids must be 1, 2, 3, ... in order")
        if n > MAX_GROUPS:
            raise _Refused(line, f"too many groups (the runtime takes at most {MAX_GROUPS})")
        contexts = _bounded(line, "group contexts", fields[1], 0, MAX_U64, "out of range")
        weight = _bounded(line, "group weight", fields[2], 0, MAX_U64, "out of range")
        plan.groups.append(PlanGroup(n, contexts, weight, packed, spans, line_off))
    elif kind == "select":
        plan.rules.append(_select(line, rest, plan))
    elif kind == "end":
        _arity(line, kind, fields, 0)
        plan_prefix.complete(line, len(plan.prefix.counters) + 1, plan.prefix, prefix_state["walk"])


def _prefix_record(line: int, kind: str, rest: str, fields: list[str], plan: Plan, state: dict) -> None:
    if kind == "prefix_region":
        plan_prefix.parse_region(line, fields, plan.prefix)
    elif kind == "prefix_counter":
        plan_prefix.parse_counter(line, fields, plan.prefix, state["ranges"])
    elif kind == "prefix_site":
        plan_prefix.parse_site(line, fields, plan.prefix)
    elif kind == "prefix_select":
        plan.prefix.rules.append(_select(line, rest, plan, prefix=True))
    else:
        plan_prefix.parse_slot(line, fields, plan.prefix, state["walk"])


def _parse(data: bytes, plan: Plan) -> None:
    if not data:
        raise _Refused(0, "empty file, not a plan")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise _Refused(0, f"not UTF-8 text (byte {err.start})") from None
    if not text.endswith("\n"):
        raise _Refused(0, "truncated (the last line has no newline)")
    last, ended = -1, False
    rule_lines: dict[tuple[PlanFrame, ...], int] = {}
    repeat: tuple[int, int] | None = None  # (line, first line) of the first chain given twice
    prule_lines: dict[tuple[PlanFrame, ...], int] = {}
    prepeat: tuple[int, int] | None = None  # the same for prefix_select
    prefix_state = {"walk": plan_prefix.SlotWalk(), "ranges": [0]}
    for lineno, line in enumerate(text.split("\n")[:-1], start=1):
        for ch in line:
            if ch == "\r":
                raise _Refused(lineno, "carriage return in the line (the plan must have LF line ends)")
            if ord(ch) < 0x20 or ord(ch) == 0x7F:
                raise _Refused(lineno, f"control character 0x{ord(ch):02x} in the line")
        if lineno == 1:
            if line == f"{PLAN_MAGIC} {PLAN_VERSION}":
                last = 0
                continue
            if len(line) > 16 and line.startswith(PLAN_MAGIC + " "):
                raise _Refused(1, f"plan version {_show(line[16:])}: this reader knows version {PLAN_VERSION}")
            raise _Refused(1, f"not a plan (the first line must be '{PLAN_MAGIC} {PLAN_VERSION}')")
        if not line or line.startswith("#"):
            if line:
                plan.comments.append(line[2:] if line.startswith("# ") else line[1:])
            continue
        if ended:
            raise _Refused(lineno, "text after 'end'")
        if line.startswith(" ") or line.endswith(" ") or "  " in line:
            raise _Refused(lineno, "fields must be separated by single spaces")
        kind, _, rest = line.partition(" ")
        if kind not in _ORDER:
            raise _Refused(lineno, f"unknown record '{_show(kind)}'")
        pos = _ORDER.index(kind)
        if pos < last or (pos == last and kind not in _REPEATABLE):
            raise _Refused(lineno, f"record '{kind}' out of order (order: {', '.join(_ORDER)})")
        for k in range(last + 1, pos):
            if _ORDER[k] not in _REPEATABLE | _OPTIONAL or (_ORDER[k] == "prefix_region" and kind != "end"):
                raise _Refused(lineno, f"record '{_ORDER[k]}' missing before '{kind}'")
        last = pos
        _record(lineno, kind, rest, plan, prefix_state)
        if kind == "select":
            chain = plan.rules[-1].frames
            if chain in rule_lines and repeat is None:
                repeat = (lineno, rule_lines[chain])
            rule_lines.setdefault(chain, lineno)
        if kind == "prefix_select":
            chain = plan.prefix.rules[-1].frames
            if chain in prule_lines and prepeat is None:
                prepeat = (lineno, prule_lines[chain])
            prule_lines.setdefault(chain, lineno)
        if kind == "end":
            ended = True
    if not ended:
        raise _Refused(0, "truncated (no 'end' record)")
    if repeat is not None:
        raise _Refused(repeat[0], f"select chain given twice (first on line {repeat[1]})")
    if prepeat is not None:
        raise _Refused(prepeat[0], f"prefix_select chain given twice (first on line {prepeat[1]})")
    plan_prefix.check_apart(plan.prefix, prefix_state["walk"])


def parse_plan_bytes(data: bytes, name: str = "<plan>") -> Plan:
    """Parse and check the bytes of a plan file as the runtime does; PlanError names the file,
    the line (when there is one) and the reason."""
    plan = Plan(strategy="halo")
    try:
        _parse(data, plan)
    except _Refused as err:
        where = f"{name}:{err.line}" if err.line else name
        raise PlanError(f"{where}: {err.reason}", err.reason, err.line) from None
    return plan


def parse_plan(text: str | bytes, name: str = "<plan>") -> Plan:
    """Parse plan text (str is taken as its UTF-8 bytes); every error names the file and line."""
    if isinstance(text, str):
        try:
            text = text.encode("utf-8")
        except UnicodeEncodeError as err:
            raise PlanError(f"{name}: not UTF-8 text (character {err.start})", "not UTF-8 text") from None
    return parse_plan_bytes(text, name)


def plan_file_problem(path: str | Path) -> str | None:
    """Why the runtime could not read `path` as a plan file (it opens it without blocking and
    takes regular files only), or None. The same words as the runtime's message."""
    try:
        st = os.stat(path)
    except OSError as err:
        return f"cannot read the file: cannot open it: {err.strerror or err}"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a plan file"
    if stat.S_ISFIFO(st.st_mode):
        return "is a pipe or FIFO, not a regular file (process substitution <(...) gives a pipe): give the plan as a file"
    if not stat.S_ISREG(st.st_mode):
        return "is not a regular file"
    return None


def read_plan(path: str | Path) -> Plan:
    """Read and check a plan file as the runtime does (a FIFO or directory is refused, never
    waited on)."""
    path = Path(path)
    problem = plan_file_problem(path)
    if problem is not None:
        raise PlanError(f"{path}: {problem}", problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # replaced since the check above
                raise PlanError(f"{path}: is not a regular file", "is not a regular file")
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        finally:
            os.close(fd)
    except OSError as err:
        problem = f"cannot read the file: cannot open it: {err.strerror or err}"
        raise PlanError(f"{path}: {problem}", problem) from None
    return parse_plan_bytes(b"".join(chunks), str(path))


def plan_refusal(path: str | Path) -> str | None:
    """What the runtime would say before refusing the plan file at `path` (without its
    "heaplayout: " and "; running unoptimized"), or None when it would take the plan."""
    try:
        read_plan(path)
    except PlanError as err:
        return f"plan {path} line {err.line}: {err.reason}" if err.line else f"plan {path}: {err.reason}"
    return None
