"""`heaplayout profile export --pprof/--folded`: the pprof file is read back by a protobuf
decoder written here from the wire-format specification (it shares no code with the
encoder) and checked against the profile's totals, frame by frame."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path

import pytest

from heaplayout.profile_export import folded_lines, pprof_bytes
from heaplayout.profile_model import Context, Module, Profile, Symbol
from heaplayout.profile_reader import read_profile
from heaplayout.protobuf_wire import varint
from report_inputs import heaplayout, make_run


# --------------------------------------------------------------------------- an independent decoder

def read_varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return value, i


def decode(data: bytes) -> dict[int, list]:
    """field number -> list of raw values (ints for varints, bytes for length-delimited)."""
    fields: dict[int, list] = {}
    i = 0
    while i < len(data):
        k, i = read_varint(data, i)
        field, wire = k >> 3, k & 7
        if wire == 0:
            v, i = read_varint(data, i)
        elif wire == 2:
            n, i = read_varint(data, i)
            v = data[i:i + n]
            i += n
        elif wire == 1:
            v, i = int.from_bytes(data[i:i + 8], "little"), i + 8
        elif wire == 5:
            v, i = int.from_bytes(data[i:i + 4], "little"), i + 4
        else:
            raise AssertionError(f"wire type {wire} at byte {i}")
        fields.setdefault(field, []).append(v)
    assert i == len(data), "message overran its length"
    return fields


def packed(values: list) -> list[int]:
    """A repeated varint field: packed (bytes) or one varint per occurrence."""
    out = []
    for v in values:
        if isinstance(v, bytes):
            i = 0
            while i < len(v):
                x, i = read_varint(v, i)
                out.append(x)
        else:
            out.append(v)
    return out


def one(fields: dict, n: int, default=0):
    return fields.get(n, [default])[-1]


def read_pprof(raw: bytes) -> dict:
    top = decode(raw)
    strings = [s.decode("utf-8") for s in top[6]]
    assert strings[0] == ""
    types = [(strings[one(vt, 1)], strings[one(vt, 2)]) for vt in map(decode, top[1])]
    functions = {one(f, 1): (strings[one(f, 2)], strings[one(f, 4)]) for f in map(decode, top.get(5, []))}
    locations = {}
    for loc in map(decode, top.get(4, [])):
        (line,) = [decode(x) for x in loc[4]]
        locations[one(loc, 1)] = (one(loc, 3), functions[one(line, 1)], one(line, 2))
    samples = []
    for s in map(decode, top.get(2, [])):
        labels = {}
        for lab in map(decode, s.get(3, [])):
            labels[strings[one(lab, 1)]] = strings[one(lab, 2)] if 2 in lab else one(lab, 3)
        samples.append(([locations[x] for x in packed(s.get(1, []))], packed(s.get(2, [])), labels))
    mappings = [decode(m) for m in top.get(3, [])]
    return {"types": types, "samples": samples, "strings": strings, "mappings": mappings,
            "default": strings[one(top, 14)]}


# --------------------------------------------------------------------------- a hand-made profile

def small_profile() -> Profile:
    p = Profile()
    p.header["exe"] = "/bin/prog"
    p.modules[0] = Module(0, "ab12", 0x400000, False, "/bin/prog")
    p.modules[1] = Module(1, None, 0x7f0000000000, True, "/lib/libx.so")
    p.symbols[(0, 0x10)] = Symbol("make_node", "prog.c", 12)
    p.symbols[(0, 0x20)] = Symbol("main", "prog.c", 40)
    p.symbols[(0, 0x30)] = Symbol("weird;name", "prog.c", 41)
    p.contexts[0] = Context(0, "m", [(0, 0x10), (0, 0x20)], objects=3, bytes=96, loads=10, stores=5)
    p.contexts[1] = Context(1, "n", [(1, 0x99), (0, 0x30)], objects=1, bytes=4096, loads=0, stores=2)
    p.contexts[2] = Context(2, "m", [(0, 0x10), (0, 0x20)], objects=0, bytes=0)  # a second run's twin
    return p


def test_varint_encoding_matches_the_specification():
    assert varint(0) == b"\x00" and varint(1) == b"\x01" and varint(300) == b"\xac\x02"
    assert varint(-1) == b"\xff" * 9 + b"\x01"  # int64 -1: ten bytes
    for v in (0, 1, 127, 128, 2**32, 2**63 - 1):
        assert read_varint(varint(v), 0) == (v, len(varint(v)))


def test_pprof_of_a_hand_made_profile_round_trips():
    p = small_profile()
    got = read_pprof(pprof_bytes(p))
    assert got["types"] == [("objects", "count"), ("bytes", "bytes"), ("accesses", "count")]
    assert got["default"] == "accesses"
    by_ctx = {s[2]["context"]: s for s in got["samples"]}
    assert set(by_ctx) == {0, 1, 2}
    assert by_ctx[0][1] == [3, 96, 15] and by_ctx[1][1] == [1, 4096, 2]
    assert by_ctx[1][2]["kind"] == "n"
    # innermost first, symbolized, addresses = bias + offset
    assert [(addr, fn[0], line) for addr, fn, line in by_ctx[0][0]] == [
        (0x400010, "make_node", 12), (0x400020, "main", 40)]
    assert by_ctx[1][0][0][:2] == (0x7f0000000099, ("libx.so+0x99", ""))  # no symbol: module+offset
    assert len(got["mappings"]) == 2


def test_folded_of_a_hand_made_profile():
    p = small_profile()
    assert folded_lines(p, "bytes") == ["main:40;make_node:12 96", "weird,name:41;libx.so+0x99 4096"]
    assert folded_lines(p, "accesses") == ["main:40;make_node:12 15", "weird,name:41;libx.so+0x99 2"]
    with pytest.raises(ValueError):
        folded_lines(p, "lines")


# --------------------------------------------------------------------------- a real profile

@pytest.fixture(scope="module")
def workload(build_dir: Path, tmp_path_factory):
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed")
    return make_run(build_dir, tmp_path_factory.mktemp("pprof"), simulate=False)


def test_export_of_a_workload_profile_matches_its_totals(workload, tmp_path: Path):
    r = heaplayout("profile", "export", str(workload.profile), "--pprof", str(tmp_path / "p.pb.gz"),
                   "--folded", str(tmp_path / "p.folded"), "--folded-value", "accesses", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    prof = read_profile(workload.profile)
    got = read_pprof(gzip.decompress((tmp_path / "p.pb.gz").read_bytes()))
    assert len(got["samples"]) == len(prof.contexts)
    totals = [sum(s[1][k] for s in got["samples"]) for k in range(3)]
    assert totals == [sum(c.objects for c in prof.contexts.values()), sum(c.bytes for c in prof.contexts.values()),
                      sum(c.accesses for c in prof.contexts.values())]
    assert totals[2] == prof.heap_accesses
    for locs, values, labels in got["samples"]:
        ctx = prof.contexts[labels["context"]]
        assert values == [ctx.objects, ctx.bytes, ctx.accesses]
        names = [fn[0] for _addr, fn, _line in locs]
        want = [prof.frame_symbol(m, off).function for m, off in ctx.frames]
        assert names == want
    assert any(fn[1] == "halo_tokens.c" and line > 0 for s in got["samples"] for _a, fn, line in s[0])
    folded = (tmp_path / "p.folded").read_text().splitlines()
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded) == prof.heap_accesses
    assert any(line.startswith("main:") and ";create_a:" in line for line in folded)


@pytest.mark.skipif(shutil.which("go") is None, reason="go (for go tool pprof) is not installed")
def test_go_pprof_reads_the_export(workload, tmp_path: Path):
    out = tmp_path / "p.pb.gz"
    assert heaplayout("profile", "export", str(workload.profile), "--pprof", str(out), cwd=tmp_path).returncode == 0
    prof = read_profile(workload.profile)
    r = subprocess.run(["go", "tool", "pprof", "-sample_index=objects", "-top", str(out)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    total = sum(c.objects for c in prof.contexts.values())
    assert f"of {total} total" in r.stdout, r.stdout
    assert "create_a" in r.stdout


def test_export_needs_an_output(workload, tmp_path: Path):
    r = heaplayout("profile", "export", str(workload.profile), cwd=tmp_path)
    assert r.returncode == 2 and "at least one output" in r.stderr
