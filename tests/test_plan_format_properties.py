"""Property tests of the Python plan reader (Hypothesis): whatever the bytes, read_plan
either returns a plan or raises PlanError (never another exception), and every valid plan
the writer writes reads back equal. The C reader's twin properties are fuzzed in fuzz/."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heaplayout.plan_format import (MAX_OFFSET, MAX_U64, Plan, PlanError, PlanGroup, PlanModule, SelectRule,
                                    parse_plan_bytes, plan_text, read_plan)

GOOD = (b"heaplayout-plan 1\n# c\nstrategy halo\nchunk_size 1048576\nmax_object_size 4096\nmin_align 8\n"
        b"rest callsite 128\nrecursion function\nmodule 0 9a1c0ef3 /work/prog\nmodule 1 - /opt/my lib/x.so\n"
        b"skip libc.so.6\ngroup 1 3 10 packed\ngroup 2 1 1\nselect 1 0:0x1a2b\nselect 2 0:0x1a40 1:1c07\n"
        b"select 0 0:0x1a40\nend\n")

# pieces of the grammar, so that random text often gets past the first line
PIECES = [b"heaplayout-plan 1\n", b"strategy halo\n", b"chunk_size 1048576\n", b"max_object_size 4096\n",
          b"min_align 8\n", b"rest callsite 64\n", b"recursion function\n", b"module 0 - /p\n", b"skip libc.so.6\n",
          b"group 1 1 1\n", b"select 1 0:0x10\n", b"select 0 0:0x10 0:0x20\n", b"end\n", b"# x\n", b"\n", b" ",
          b"0x", b":", b"18446744073709551616", b"\r\n", b"\x00", b"\xff", "é".encode(), b"0:0xffff00000000150f"]


def accepts_or_refuses(data: bytes) -> None:
    try:
        plan = parse_plan_bytes(data, "x.plan")
    except PlanError as err:
        assert str(err).startswith("x.plan") and err.reason and err.line >= 0
    else:
        assert isinstance(plan, Plan)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_are_a_plan_or_a_plan_error(data: bytes) -> None:
    accepts_or_refuses(data)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.binary(max_size=8), max_size=30))
def test_grammar_shaped_bytes_are_a_plan_or_a_plan_error(pieces: list[bytes]) -> None:
    accepts_or_refuses(b"".join(pieces))


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(GOOD)), st.integers(0, 8), st.binary(max_size=12))
def test_edited_plans_are_a_plan_or_a_plan_error(at: int, cut: int, insert: bytes) -> None:
    accepts_or_refuses(GOOD[:at] + insert + GOOD[at + cut:])


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=200))
def test_read_plan_on_a_file_is_a_plan_or_a_plan_error(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "p.plan"
    path.write_bytes(data)
    try:
        read_plan(path)
    except PlanError:
        pass


# ---- valid plans round trip ----

def one_line(min_size: int, max_size: int) -> st.SearchStrategy[str]:
    """Text for a path: no control characters, single spaces, none at either end."""
    alphabet = st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="\n\r")
    return (st.text(alphabet, min_size=min_size, max_size=max_size)
            .map(lambda s: " ".join(s.split(" ")).strip(" "))
            .map(lambda s: " ".join(w for w in s.split(" ") if w))
            .filter(lambda s: 1 <= len(s.encode("utf-8")) <= 511))


words = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), min_size=1, max_size=40)
comments = st.text(st.characters(blacklist_categories=("Cc", "Cs")), max_size=30)


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    nmodules = draw(st.integers(0, 5))
    modules = [PlanModule(i, draw(st.none() | st.binary(min_size=1, max_size=64).map(bytes.hex)), draw(one_line(1, 60)))
               for i in range(nmodules)]
    ngroups = draw(st.integers(0, 6))
    groups = [PlanGroup(g, draw(st.integers(0, MAX_U64)), draw(st.integers(0, MAX_U64)), draw(st.booleans()))
              for g in range(1, ngroups + 1)]
    rules: list[SelectRule] = []
    if nmodules:
        frame = st.tuples(st.integers(0, nmodules - 1), st.integers(0, MAX_OFFSET))
        chains = draw(st.lists(st.lists(frame, min_size=1, max_size=16).map(tuple), max_size=12, unique=True))
        rules = [SelectRule(draw(st.integers(0, ngroups)), chain) for chain in chains]
    rest = draw(st.sampled_from(["allocator", "callsite"]))
    return Plan(strategy=draw(st.sampled_from(["halo", "callsite", "hds"])),
                chunk_size=1 << draw(st.integers(18, 26)),
                max_object_size=draw(st.integers(1, 32768)),
                rest=rest, rest_max_size=draw(st.integers(1, 32768)) if rest == "callsite" else 0,
                min_align=draw(st.sampled_from([8, 16])),
                recursion_function=draw(st.booleans()),
                modules=modules, skips=draw(st.lists(words, max_size=5)),
                groups=groups, rules=rules, comments=draw(st.lists(comments, max_size=3)))


@settings(max_examples=300, deadline=None)
@given(plans())
def test_written_plans_read_back_equal(plan: Plan) -> None:
    assert parse_plan_bytes(plan_text(plan).encode("utf-8")) == plan
