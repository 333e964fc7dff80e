"""The profile reader refuses damaged profiles instead of planning them (issue 19, finding
9): a checksum in END catches any changed byte; cross-record checks catch what a profile
without one (cut, or written by hand) gets wrong; a cut profile is not planned by default.
Property tests: any bytes either parse or raise ProfileError, and write/parse round-trips."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from heaplayout import paths
from heaplayout.profile_model import Context, Module, Object, Profile, Symbol
from heaplayout.profile_reader import ProfileError, parse_profile, read_profile
from heaplayout.profile_writer import write_profile


def small_profile() -> Profile:
    """Two contexts of one module, a few objects, every record kind."""
    p = Profile()
    p.header = {"tool": "hlprof 0.1", "exe": "/bin/prog"}
    p.args = ["a b", "%x"]
    p.modules[0] = Module(0, "ab12", 0x1000, False, "/bin/prog")
    p.symbols[(0, 0x10)] = Symbol("make_node", "prog.c", 12)
    p.contexts[0] = Context(0, "m", [(0, 0x10)], objects=2, bytes=64, max_live=2, loads=5, stores=3,
                            load_bytes=40, store_bytes=24)
    p.contexts[1] = Context(1, "n", [(0, 0x20), (0, 0x30)], objects=1, bytes=16, max_live=1, loads=1, stores=1,
                            load_bytes=8, store_bytes=8)
    p.objects = [Object(1, 0, 0, 32, 0, 9, 1, 3, 2, 24, 16), Object(2, 1, 0, 16, 2, None, 1, 1, 1, 8, 8),
                 Object(3, 0, 1, 32, 4, None, 1, 2, 1, 16, 8)]
    p.stream = [1, 2, 1, 3]
    p.affinity = {(0, 1): 4, (0, 0): 1}
    p.walk = {0: 1}
    p.pointer_edges = {(0, 8, 1): 2}
    p.adjacent_links = {(0, 8, 1): 1}
    p.has_adjacent_links = True
    p.summary = {"heap_accesses": 10, "objects": 3, "contexts": 2}
    p.complete = True
    p.has_totals = True
    return p


def text_of(p: Profile) -> str:
    buf = io.StringIO()
    write_profile(p, buf)
    return buf.getvalue()


def parse_text(text: str) -> Profile:
    return parse_profile(io.BytesIO(text.encode()), name="t")


def test_round_trip_with_checksum() -> None:
    text = text_of(small_profile())
    assert text.splitlines()[-1].startswith("END ")
    assert text_of(parse_text(text)) == text


def test_a_changed_digit_is_caught_by_the_checksum() -> None:
    text = text_of(small_profile())
    damaged = text.replace("A 0 1 4", "A 0 1 5")
    assert damaged != text
    with pytest.raises(ProfileError, match="checksum"):
        parse_text(damaged)


@pytest.mark.parametrize("edit, what", [
    (lambda p: setattr(p.contexts[0], "loads", -5), "negative"),
    (lambda p: p.affinity.__setitem__((0, 7), 3), "unknown context"),
    (lambda p: p.contexts[1].frames.append((4, 0x40)), "names no module"),
    (lambda p: p.objects.append(Object(4, 9, 0, 8, 1, None, 1, 0, 0, 0, 0)), "unknown context"),
    (lambda p: p.pointer_edges.__setitem__((0, 0, 5), 1), "pointer edge"),
    (lambda p: setattr(p.contexts[1], "max_live", 7), "live at once"),
    (lambda p: p.symbols.__setitem__((3, 0x10), Symbol("f", None, 0)), "unknown module"),
])
def test_inconsistent_records_are_refused(edit, what) -> None:
    """Written with a valid checksum, so only the cross-record checks can catch them."""
    p = small_profile()
    edit(p)
    with pytest.raises(ProfileError, match=what):
        parse_text(text_of(p))


def test_records_after_end_are_refused() -> None:
    with pytest.raises(ProfileError, match="after END"):
        parse_text(text_of(small_profile()) + "A 0 1 3\n")


def _plan(profile: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "heaplayout.cli", "plan", str(profile), "-o", str(out), *extra],
                          capture_output=True, text=True, env=env, timeout=60)


def test_plan_refuses_a_cut_profile_and_says_why(tmp_path: Path) -> None:
    text = text_of(small_profile())
    cut = tmp_path / "cut.prof"
    cut.write_text(text[: text.index("\nX ") + 1])  # the run died before its exit records
    r = _plan(cut, tmp_path / "p.plan")
    assert r.returncode == 1 and "incomplete" in r.stderr and not (tmp_path / "p.plan").exists()
    r = _plan(cut, tmp_path / "p.plan", "--allow-incomplete")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.plan").exists()


def test_plan_refuses_a_damaged_profile(tmp_path: Path) -> None:
    bad = tmp_path / "bad.prof"
    bad.write_text(text_of(small_profile()).replace("X 0 2 64", "X 0 2 65"))
    r = _plan(bad, tmp_path / "p.plan")
    assert r.returncode == 1 and "checksum" in r.stderr


# ---- properties ----

VALID = text_of(small_profile()).encode()


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400))
def test_any_bytes_parse_or_raise_profile_error(data: bytes) -> None:
    try:
        parse_profile(io.BytesIO(b"hlprof 1\n" + data), name="fuzz")
    except ProfileError:
        pass


@settings(max_examples=400, deadline=None)
@given(st.integers(0, len(VALID) - 1), st.integers(0, 7))
def test_every_single_bit_flip_is_refused_or_harmless(pos: int, bit: int) -> None:
    """A flipped bit anywhere gives ProfileError, except where the reader never looks
    (a flip inside the END checksum itself is a checksum mismatch too)."""
    data = bytearray(VALID)
    data[pos] ^= 1 << bit
    try:
        p = parse_profile(io.BytesIO(bytes(data)), name="flip")
    except ProfileError:
        return
    # accepted only if the flip cut the file before END (then it is marked incomplete)
    assert not p.complete


idents = st.integers(0, 5)
counts = st.integers(0, 10**6)


@st.composite
def profiles(draw) -> Profile:
    p = Profile()
    p.header = {"tool": "hlprof 0.1", "exe": draw(st.text(min_size=1, max_size=12).filter(lambda s: "\x00" not in s))}
    nmods = draw(st.integers(1, 3))
    for m in range(nmods):
        p.modules[m] = Module(m, draw(st.one_of(st.none(), st.text("0123456789abcdef", min_size=2, max_size=8))),
                              draw(st.integers(0, 2**40)), draw(st.booleans()), f"/lib/m{m}.so")
    nctx = draw(st.integers(1, 4))
    for c in range(nctx):
        frames = draw(st.lists(st.tuples(st.integers(0, nmods - 1), st.integers(0, 2**32)), min_size=1, max_size=4))
        objects = draw(counts)
        p.contexts[c] = Context(c, draw(st.sampled_from("mcrnNa")), frames, objects, draw(counts),
                                draw(st.integers(0, objects)), draw(counts), draw(counts), draw(counts), draw(counts))
    for _ in range(draw(st.integers(0, 4))):
        x, y = sorted((draw(st.integers(0, nctx - 1)), draw(st.integers(0, nctx - 1))))
        p.affinity[(x, y)] = draw(counts)
    p.summary = {"objects": draw(counts), "contexts": nctx}
    p.complete = True
    p.has_totals = True
    return p


@settings(max_examples=150, deadline=None)
@given(profiles())
def test_written_profiles_read_back_equal(p: Profile) -> None:
    q = parse_text(text_of(p))
    assert q.modules == p.modules and q.contexts == p.contexts and q.affinity == p.affinity
    assert q.header == p.header and q.summary == p.summary and q.complete
