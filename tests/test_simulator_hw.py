"""The native-time parts of the simulator's model (issue 26), through the native driver
build/tests/simulator/model_test on access patterns whose answers are known: the core timing
(overlapping independent misses, serializing a pointer chase), the L2 adjacent-line and
streamer prefetchers, the DRAM row buffer, and page walks through the caches."""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

BASE = 0x10000000
FAR = 1 << 20  # addresses this far apart share no line, page or DRAM row
MEM = 250  # the default memory latency


@pytest.fixture(scope="module")
def model_test(build_dir: Path) -> Path:
    exe = build_dir / "tests" / "simulator" / "model_test"
    if not exe.exists():
        pytest.fail(f"{exe} not built: run scripts/build.sh")
    return exe


def sim(exe: Path, trace: str, *opts: str) -> dict:
    r = subprocess.run([str(exe), *opts], input=trace.encode(), capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def loads(addrs: list[int], values: list[int] | None = None, gap: int = 10) -> str:
    """one 8-byte load per address, `gap` instructions apart, each with the value it read"""
    values = values or [0] * len(addrs)
    return "".join(f"R {a:x} 8 401000 {i * gap} {v:x}\n" for i, (a, v) in enumerate(zip(addrs, values)))


# ----------------------------------------------------------------------------- core timing

def chase(n: int) -> tuple[list[int], list[int]]:
    """a linked list whose nodes are FAR apart: each load reads the next node's address"""
    addrs = [BASE + i * FAR for i in range(n)]
    return addrs, addrs[1:] + [0]


def test_independent_misses_overlap(model_test):
    n = 400
    addrs = [BASE + i * FAR for i in range(n)]
    r = sim(model_test, loads(addrs), "--timing=mlp", "--tlb=no")
    assert r["memory_served"] == n
    # 12 fill buffers: about n / 12 memory latencies, far from the n of a serial walk
    assert r["timing"]["cycles"] < n * MEM / 8
    assert r["timing"]["cycles"] > n * MEM / 13
    serial = sim(model_test, loads(addrs), "--timing=mlp", "--tlb=no", "--deps=all")
    assert serial["timing"]["cycles"] >= n * MEM
    assert serial["timing"]["dependent"] == n - 1


def test_pointer_chase_is_serialized(model_test):
    addrs, values = chase(300)
    r = sim(model_test, loads(addrs, values), "--timing=mlp", "--tlb=no")
    assert r["timing"]["dependent"] == 299
    assert r["timing"]["cycles"] >= 300 * MEM
    free = sim(model_test, loads(addrs, values), "--timing=mlp", "--tlb=no", "--deps=none")
    assert free["timing"]["cycles"] < 300 * MEM / 8


def test_dependence_span(model_test):
    """a field 200 bytes into the node is derived from the pointer only with a span past 200"""
    addrs, values = chase(100)
    trace = "".join(f"R {a + 200:x} 8 401000 {i * 10} {v:x}\n" for i, (a, v) in enumerate(zip(addrs, values)))
    short = sim(model_test, trace, "--timing=mlp", "--tlb=no", "--dep-span=128")
    wide = sim(model_test, trace, "--timing=mlp", "--tlb=no", "--dep-span=256")
    assert short["timing"]["dependent"] == 0
    assert wide["timing"]["dependent"] == 99
    assert wide["timing"]["cycles"] > 5 * short["timing"]["cycles"]
    assert short["timing"]["load_misses"] == 100


def test_hit_on_a_line_in_flight_waits(model_test):
    """a second load to a line whose miss is still in flight waits for its fill"""
    trace = f"R {BASE:x} 8 401000 0 0\nR {BASE + 8:x} 8 401000 1 {BASE + FAR:x}\nR {BASE + FAR:x} 8 401000 2 0\n"
    r = sim(model_test, trace, "--timing=mlp", "--tlb=no")
    assert r["timing"]["line_waits"] == 1
    assert r["timing"]["dependent"] == 1  # the third load's address came from the waiting hit
    assert r["timing"]["cycles"] >= 2 * MEM


def test_rob_bounds_the_overlap(model_test):
    """misses more than a reorder buffer apart cannot overlap"""
    addrs = [BASE + i * FAR for i in range(100)]
    close = sim(model_test, loads(addrs, gap=10), "--timing=mlp", "--tlb=no")
    apart = sim(model_test, loads(addrs, gap=2000), "--timing=mlp", "--tlb=no", "--rob=224")
    assert close["timing"]["cycles"] < 100 * MEM / 4
    # each miss stalls for its latency minus the ROB's 56 cycles of dispatch
    assert apart["timing"]["stall_cycles"] >= 100 * (MEM - 224 * 0.25) - 10
    assert apart["timing"]["cycles"] >= 99 * 2000 * 0.25 + 100 * (MEM - 224 * 0.25) - 10


def test_timing_leaves_counts_alone_and_fast_paths_agree(build_dir, model_test):
    rng = random.Random(3)
    lines = []
    for i in range(20000):
        a = BASE + rng.randrange(0, 1 << 22) if rng.random() < 0.5 else BASE + (i * 24) % (1 << 16)
        lines.append(f"{'W' if rng.random() < 0.2 else 'R'} {a:x} {rng.choice((4, 8, 16))} {0x401000 + i % 7:x} "
                     f"{i * 3} {a + 64 * rng.randrange(4) if rng.random() < 0.5 else 0:x}\n")
    trace = "".join(lines)
    plain = sim(model_test, trace)
    timed = sim(model_test, trace, "--timing=mlp")
    for key in ("levels", "tlb", "cycles", "memory_served"):
        assert plain[key] == timed[key]
    slow = build_dir / "tests" / "simulator" / "model_test_slow"
    for opts in (("--hw=yes",), ("--timing=mlp", "--deps=none"), ("--hw=yes", "--dram=no", "--levels=2")):
        assert sim(model_test, trace, *opts) == sim(slow, trace, *opts)


def hw_mixed_trace(seed: int, n: int = 30000) -> str:
    """What the --hw shortcuts see in real runs: strided walks of several instructions with
    strides below and above a line (the stride prefetcher's look-ahead), small linked nodes
    whose loads read the next node's address (dependent loads in flight), stores, page hops
    and far jumps (page walks, DRAM rows, physical frames)."""
    rng = random.Random(seed)
    nodes = [BASE + (1 << 22) + rng.randrange(0, 1 << 16) * 48 for _ in range(3000)]
    cursors = {pc: BASE + rng.randrange(0, 1 << 20) for pc in range(8)}
    steps = (8, 16, 24, 40, -8, 72, 128, -200)
    out, node, instr = [], 0, 0
    for _ in range(n):
        r = rng.random()
        instr += rng.randrange(1, 6)
        if r < 0.45:
            pc = rng.randrange(8)
            cursors[pc] = (cursors[pc] + steps[pc]) & ((1 << 47) - 1)
            a, v, kind = cursors[pc], 0, "W" if rng.random() < 0.25 else "R"
        elif r < 0.8:
            pc, nxt = 8, rng.randrange(len(nodes))
            a, v, kind = nodes[node] + rng.choice((0, 8, 16)), nodes[nxt], "R"
            node = nxt
        else:
            pc = 9
            a, v, kind = BASE + rng.randrange(0, 1 << 30) & ~7, 0, "R"
        out.append(f"{kind} {a:x} 8 {0x401000 + 16 * pc:x} {instr} {v:x}\n")
    return "".join(out)


@pytest.mark.parametrize("opts", [
    ("--hw=yes",), ("--hw=yes", "--line=32"), ("--hw=yes", "--pf-degree=3"), ("--hw=yes", "--dram-geometry=8,2048"),
    ("--hw=yes", "--pf-adjacent=yes", "--deps=all"), ("--timing=mlp", "--prefetch=stride", "--pf-streamer=yes"),
])
def test_hw_shortcuts_match_the_full_model(build_dir, model_test, opts):
    # model_test_slow (HS_NO_FASTPATH) takes none of the shortcuts of the --hw path (timing
    # retirement check, stride look-ahead kept per entry, one set scan per prefetch fill,
    # DRAM row by shift, frame memo): every count and the time estimate must be identical.
    slow = build_dir / "tests" / "simulator" / "model_test_slow"
    for seed in (1, 2):
        trace = hw_mixed_trace(seed)
        fast_r, slow_r = sim(model_test, trace, *opts), sim(slow, trace, *opts)
        assert fast_r == slow_r
        assert fast_r["levels"][0]["pf_issued"] > 1000 and fast_r["timing"]["dependent"] > 1000
        assert fast_r["walks"] > 100 or "--hw=yes" not in opts


# ----------------------------------------------------------------------------- L2 prefetchers

def test_streamer_follows_a_stream_within_pages(model_test):
    walk = f"S {BASE:x} 1024 64 8\n"  # 16 pages, line by line
    off = sim(model_test, walk, "--tlb=no")
    on = sim(model_test, walk, "--tlb=no", "--pf-streamer=yes")
    assert off["levels"][1]["misses"] == 1024
    # 3 demand misses train each page, the rest is prefetched into L2
    assert on["levels"][1]["misses"] <= 16 * 4
    assert on["l2pf_useful"] >= 1024 - 16 * 4
    down = sim(model_test, f"S {BASE + 1024 * 64 - 64:x} 1024 -64 8\n", "--tlb=no", "--pf-streamer=yes")
    assert down["levels"][1]["misses"] <= 16 * 4
    # one line per page: nothing to follow
    sparse = sim(model_test, f"S {BASE:x} 256 4096 8\n", "--tlb=no", "--pf-streamer=yes")
    assert sparse["l2pf_issued"] == 0


def test_adjacent_line_completes_the_pair(model_test):
    even = f"S {BASE:x} 512 128 8\n"  # lines 0, 2, 4, ...
    odd = f"S {BASE + 64:x} 512 128 8\n"  # then 1, 3, 5, ...: the pairs' other halves
    r = sim(model_test, even + odd, "--tlb=no", "--L1=4096,4,64", "--pf-adjacent=yes")
    assert r["l2pf_issued"] == 512
    assert r["levels"][1]["misses"] == 512  # the odd lines hit in L2
    no = sim(model_test, even + odd, "--tlb=no", "--L1=4096,4,64")
    assert no["levels"][1]["misses"] == 1024


# ----------------------------------------------------------------------------- DRAM, walks

def test_dram_open_rows(model_test):
    same_row = f"S {BASE:x} 64 64 8\n"  # 4 KiB: one 8 KiB row
    rows = f"S {BASE:x} 64 {FAR} 8\n"  # every access another row of the same bank pattern
    a = sim(model_test, same_row, "--tlb=no", "--dram=yes")
    b = sim(model_test, rows, "--tlb=no", "--dram=yes")
    assert a["dram_accesses"] == b["dram_accesses"] == 64
    assert a["dram_row_hits"] == 63
    assert b["dram_row_hits"] < 8
    assert a["cycles"] < b["cycles"]
    plain = sim(model_test, same_row, "--tlb=no")
    assert plain["cycles"] - a["cycles"] == 63 * (MEM - 180)


def test_page_walks_through_the_caches(model_test):
    seq = f"S {BASE:x} 4096 4096 8\n"  # 4096 consecutive pages: 8 share a PTE line
    rng = random.Random(5)
    scattered = "".join(f"R {BASE + rng.randrange(1 << 18) * 4096:x} 8\n" for _ in range(4096))
    a = sim(model_test, seq, "--walk-cache=yes")
    b = sim(model_test, scattered, "--walk-cache=yes")
    assert a["walks"] == 4096 and a["walk_pde_misses"] == 8  # one per 2 MiB
    assert a["walk_cycles"] < b["walk_cycles"] / 2
    fixed = sim(model_test, seq)
    assert fixed["walks"] == 0 and fixed["tlb_cycles"] == 4096 * (7 + 30)


def test_bad_options_rejected(model_test):
    for bad in ("--timing=fast", "--deps=some", "--mshr=0", "--mshr=65", "--streamer=0,2", "--dram-geometry=3,8192",
                "--pf-streamer=maybe"):
        r = subprocess.run([str(model_test), bad], input=b"", capture_output=True, timeout=10)
        assert r.returncode == 2, bad
    r = subprocess.run([str(model_test), "--walk-cache=yes", "--tlb=no"], input=b"", capture_output=True, timeout=10)
    assert r.returncode == 2 and b"needs a TLB" in r.stderr


def chase_trace(lines: list[int]) -> str:
    addrs = [BASE + k * 64 for k in lines]
    return loads(addrs, addrs[1:] + [0], gap=4)


def test_prefetches_take_time(model_test):
    """a chase over sequential lines waits for prefetches still on their way; four streams
    visited in turn leave each prefetch four times longer to arrive (chase_latency.c modes 1
    and 3: 30 and 15 ns per load natively)"""
    n = 16384
    one = sim(model_test, chase_trace(list(range(n))), "--hw=yes")
    q = 1 << 16
    four = sim(model_test, chase_trace([(i % 4) * q + i // 4 for i in range(n)]), "--hw=yes")
    per_one, per_four = one["timing"]["cycles"] / n, four["timing"]["cycles"] / n
    assert one["levels"][1]["misses"] < n / 100  # prefetched, yet
    assert 15 < per_one < MEM / 2  # not free: the line is still arriving
    assert one["timing"]["line_waits"] > n / 2
    assert per_four < 0.75 * per_one
    shuffled = list(range(n))
    rng = random.Random(1)
    for p in range(0, n, 64):
        blk = shuffled[p:p + 64]
        rng.shuffle(blk)
        shuffled[p:p + 64] = blk
    within = sim(model_test, chase_trace(shuffled), "--hw=yes")
    assert within["timing"]["cycles"] / n > 1.5 * per_one  # no direction to follow in a page


def test_hw_estimate_separates_the_issue_case(build_dir, monkeypatch):
    """issue 26's case end to end: health's objects in allocation order vs spread at random
    over four arenas (libhlperturb). Natively several times slower (docs/simulator.md); the
    latency-sum estimate rates them nearly equal, the --hw estimate well apart."""
    import os
    from heaplayout import paths
    from heaplayout.simulate import SimOptions, format_result, perturb_env, run_simulation
    argv = [str(paths.workload_binary("health")), "7", "20", "1"]
    est: dict[tuple[str, str], dict] = {}
    for mode in ("order", "random"):
        env = perturb_env(mode)
        lib = env.pop("LD_PRELOAD")
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        for variant, model in (("sum", {}), ("hw", {"hw": "yes"})):
            est[(mode, variant)] = run_simulation(argv, SimOptions(allocator=lib, model=model),
                                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hw = est[("order", "hw")]
    assert hw["estimate"] == hw["timing"]["cycles"] + hw["fault_cycles"]
    assert hw["config"]["timing"] == "mlp" and hw["config"]["pf_streamer"] and hw["walks"] > 0
    assert "core timing" in format_result(hw)
    assert "timing" not in est[("order", "sum")]
    ratio = {v: est[("random", v)]["estimate"] / est[("order", v)]["estimate"] for v in ("sum", "hw")}
    assert ratio["sum"] < 1.15, ratio
    assert ratio["hw"] > 1.4, ratio


def test_physical_indexing_spreads_power_of_two_strides(model_test):
    """a cyclic walk with a 1280-byte stride (prefix_hot's hot chain) over 2.4 MB: virtually
    indexed, the 4 MiB LLC uses a quarter of its sets and misses every line again; physically
    indexed (frames pseudo-random, the LLC's set hashed) it keeps them. L1 is unchanged."""
    walk = "".join(f"S {BASE + 16:x} 18753 1280 8 401000\nS {BASE + 64:x} 18753 1280 8 401010\n" for _ in range(5))
    virt = sim(model_test, walk, "--tlb=no")
    phys = sim(model_test, walk, "--tlb=no", "--phys-index=yes")
    assert virt["levels"][0] == phys["levels"][0]
    assert virt["levels"][2]["misses"] > 4 * 37506  # every pass misses again
    assert phys["levels"][2]["misses"] < 2 * 37506  # the first pass, and a little conflict
