"""The simulator (issue 6): the model (simulator/model.c) through its native driver
build/tests/simulator/model_test on hand-made access patterns whose answers are known, and
`heaplayout simulate` (the hlsim Valgrind tool) end to end against cachegrind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths
from heaplayout.simulate import SimOptions, rel_diff, run_cachegrind, run_simulation

BASE = 0x10000000  # a 1 MiB-aligned base address for the patterns


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


def walk(start: int, count: int, step: int, size: int = 8, pc: int = 0x401000) -> str:
    """generator line: `count` reads at start + i*step"""
    return f"S {start:x} {count} {step} {size} {pc:x}\n"


# ----------------------------------------------------------------------------- caches


class RefCache:
    """A plain LRU set-associative cache, the reference for the C model."""

    def __init__(self, size, ways, line):
        self.ways, self.shift, self.nsets = ways, line.bit_length() - 1, size // line // ways
        self.sets = [[] for _ in range(self.nsets)]

    def access(self, addr):  # True on a hit
        line = addr >> self.shift
        s = self.sets[line % self.nsets]
        if line in s:
            s.remove(line)
            s.insert(0, line)
            return True
        s.insert(0, line)
        del s[self.ways:]
        return False


def test_model_matches_reference_lru_on_random_trace(model_test):
    import random
    rng = random.Random(7)
    l1, l2, ll = RefCache(4096, 4, 64), RefCache(16384, 8, 64), RefCache(65536, 16, 128)
    trace, miss = [], [0, 0, 0]
    hot = [BASE + rng.randrange(0, 1 << 16) for _ in range(64)]
    for _ in range(30000):
        r = rng.random()
        a = rng.choice(hot) if r < 0.5 else (BASE + rng.randrange(0, 1 << 18) if r < 0.9 else trace[-1][0] + 8 if trace else BASE)
        a &= ~7
        trace.append((a, "W" if rng.random() < 0.3 else "R"))
        for i, c in enumerate((l1, l2, ll)):
            if c.access(a):
                break
            miss[i] += 1
    text = "".join(f"{k} {a:x} 8\n" for a, k in trace)
    r = sim(model_test, text, "--L1=4096,4,64", "--L2=16384,8,64", "--LL=65536,16,128", "--tlb=no")
    assert [lv["misses"] for lv in r["levels"]] == miss
    assert r["cycles"] == (30000 - miss[0]) * 5 + (miss[0] - miss[1]) * 15 + (miss[1] - miss[2]) * 50 + miss[2] * 250


def mixed_trace(seed: int, n: int = 40000) -> str:
    """Accesses with the locality real programs have, in random proportions: a hot set, runs
    along lines, page hops, straddling and odd-sized accesses, stores, several PCs, unmaps."""
    import random
    rng = random.Random(seed)
    hot = [BASE + rng.randrange(0, 1 << 20) for _ in range(200)]
    out, a = [], BASE
    for i in range(n):
        r = rng.random()
        if r < 0.35:
            a = rng.choice(hot)
        elif r < 0.6:
            a += rng.choice((8, 8, 16, 64, -8))
        elif r < 0.75:
            a = BASE + rng.randrange(0, 1 << 24)
        elif r < 0.8:
            a += 4096 * rng.randrange(1, 40)
        size = rng.choice((1, 4, 8, 8, 8, 16, 32, 60, 200))
        pc = 0x401000 + 16 * rng.randrange(0, 12)
        out.append(f"{'W' if rng.random() < 0.3 else 'R'} {a & ((1 << 47) - 1):x} {size} {pc:x}\n")
        if i % 9973 == 0:
            lo = BASE + rng.randrange(0, 1 << 24) & ~4095
            out.append(f"U {lo:x} {lo + 4096 * rng.randrange(1, 64):x}\n")
    return "".join(out)


@pytest.mark.parametrize("opts", [
    (), ("--tlb=no",), ("--levels=2", "--D1=32768,8,64", "--LL=4194304,16,64", "--tlb=no"),
    ("--prefetch=nextline",), ("--prefetch=tagged", "--pf-degree=2"), ("--prefetch=stride",),
    ("--prefetch=cc-all", f"--pool-range={BASE:#x}-{BASE + (1 << 22):#x}"), ("--prefetch=tagged", "--pf-level=2"),
    ("--line=32",), ("--line=128", "--tlb-levels=1"), ("--page-size=2097152",), ("--L1=3072,3,64",),
])
def test_fast_paths_match_the_full_model(build_dir, model_test, opts):
    # model_test_slow is the same driver with HS_NO_FASTPATH: every access takes the full path.
    # The fast paths are shortcuts, never approximations: every count must be identical.
    slow = build_dir / "tests" / "simulator" / "model_test_slow"
    assert slow.exists(), f"{slow} not built"
    for seed in (1, 2):
        trace = mixed_trace(seed)
        fast_r, slow_r = sim(model_test, trace, *opts), sim(slow, trace, *opts)
        assert fast_r == slow_r
        assert fast_r["levels"][0]["misses"] > 100 and fast_r["levels"][0]["accesses"] > fast_r["refs"] // 2


def test_strided_walk_misses_equal_touched_lines(model_test):
    # 128-byte stride over 4000 accesses: every access touches a new 64-byte line
    r = sim(model_test, walk(BASE, 4000, 128))
    assert r["levels"][0]["misses"] == 4000
    assert r["levels"][1]["misses"] == 4000 and r["levels"][2]["misses"] == 4000
    # 16-byte stride: 4 accesses per line, so a quarter of them miss
    r = sim(model_test, walk(BASE, 4000, 16))
    assert r["levels"][0]["accesses"] == 4000
    assert r["levels"][0]["misses"] == 1000
    # twice over 16 KiB (fits L1): the second pass hits
    r = sim(model_test, walk(BASE, 256, 64) * 2)
    assert r["levels"][0]["misses"] == 256


def test_line_size_changes_touched_lines(model_test):
    for line in (16, 32, 64, 128, 256):
        r = sim(model_test, walk(BASE, 1024, 16), f"--line={line}")
        assert r["levels"][0]["misses"] == 1024 * 16 // line, line


def test_set_thrash_lru(model_test):
    # L1 48K/12-way/64B has 64 sets: lines 4 KiB apart map to one set.
    ways = 12
    thrash = walk(BASE, ways + 1, 4096) * 10
    r = sim(model_test, thrash)
    assert r["levels"][0]["misses"] == (ways + 1) * 10  # LRU: every access misses
    assert r["levels"][1]["misses"] == ways + 1  # L2 holds them all: cold misses only
    fits = walk(BASE, ways, 4096) * 10
    r = sim(model_test, fits)
    assert r["levels"][0]["misses"] == ways


def test_two_level_cachegrind_geometry(model_test):
    # D1 32K/8/64 (64 sets) + LL 4M/16/64: 9 lines in one D1 set thrash D1, not LL
    r = sim(model_test, walk(BASE, 9, 4096) * 5, "--levels=2", "--L1=32768,8,64", "--LL=4194304,16,64")
    assert len(r["levels"]) == 2
    assert r["levels"][0]["misses"] == 45 and r["levels"][1]["misses"] == 9


def test_straddling_access_touches_two_lines(model_test):
    r = sim(model_test, f"R {BASE + 60:x} 8\nR {BASE + 64:x} 4\n")
    assert r["line_accesses"] == 3 and r["refs"] == 2
    assert r["levels"][0]["misses"] == 2


def test_stores_are_write_allocate(model_test):
    r = sim(model_test, f"W {BASE:x} 8\nR {BASE + 8:x} 8\n")
    assert r["stores"] == 1 and r["levels"][0]["misses"] == 1


# ----------------------------------------------------------------------------- TLB


def test_tlb_page_walks(model_test):
    # DTLB 64 entries, 4-way (16 sets): 64 pages fit, so 5 rounds miss only the first time
    r = sim(model_test, walk(BASE, 64, 4096) * 5, "--tlb-levels=1")
    assert r["tlb"][0]["misses"] == 64
    # 128 pages: 8 per DTLB set > 4 ways: every access misses the DTLB but hits the STLB
    r = sim(model_test, walk(BASE, 128, 4096) * 5)
    assert r["tlb"][0]["misses"] == 640 and r["tlb"][1]["misses"] == 128
    # 2048 pages exceed the STLB's reach (1536 entries, 12-way, 128 sets: 16 pages per set)
    r = sim(model_test, walk(BASE, 2048, 4096) * 3)
    assert r["tlb"][1]["misses"] == 2048 * 3
    # 2 MiB pages: the same walk fits in one page
    r = sim(model_test, walk(BASE, 2048, 4096) * 3, "--page-size=2097152")
    assert r["tlb"][0]["misses"] == 4  # 8 MiB from a 2 MiB-aligned base: 4 huge pages


def test_first_touch_page_faults(model_test):
    # 2048 pages, three rounds: each page faults once (the later rounds miss the STLB too)
    r = sim(model_test, walk(BASE, 2048, 4096) * 3, "--fault-cost=1000")
    assert r["page_faults"] == 2048 and r["fault_cycles"] == 2048 * 1000
    # unmapping the first 100 pages makes exactly those fault again
    r = sim(model_test, walk(BASE, 2048, 4096) + f"U {BASE:x} {BASE + 100 * 4096:x}\n" + walk(BASE, 2048, 4096),
            "--fault-cost=1000")
    assert r["page_faults"] == 2048 + 100
    # the cost is part of the cycles; 0 turns the model off
    off = sim(model_test, walk(BASE, 2048, 4096) * 3, "--fault-cost=0")
    on = sim(model_test, walk(BASE, 2048, 4096) * 3, "--fault-cost=1000")
    assert off["page_faults"] == 0 and on["cycles"] - off["cycles"] == 2048 * 1000
    # without a TLB model, faults are not modelled (they are found on last-level TLB misses)
    assert sim(model_test, walk(BASE, 2048, 4096), "--tlb=no")["page_faults"] == 0


# ----------------------------------------------------------------------------- prefetchers


LINES = 20000  # a sequential 8-byte walk over 20000 lines (1.25 MB: beyond L1 and L2 reach)


def seq():
    return walk(BASE, LINES * 8, 8)


def test_no_prefetcher_sequential_misses_every_line(model_test):
    r = sim(model_test, seq())
    assert r["levels"][0]["misses"] == LINES and r["levels"][0]["pf_issued"] == 0


@pytest.mark.parametrize("pf", ["stride", "tagged"])
def test_sequential_walk_is_covered(model_test, pf):
    r = sim(model_test, seq(), f"--prefetch={pf}")
    l1 = r["levels"][0]
    assert l1["misses"] <= 2  # only the warm-up
    assert l1["pf_useful"] >= LINES - 3
    assert l1["pf_useless"] + l1["pf_resident"] <= 2
    assert r["covered"] == l1["pf_useful"]
    plain = sim(model_test, seq())
    assert r["cycles"] < plain["cycles"] / 3


def test_prefetch_on_miss_halves_misses(model_test):
    r = sim(model_test, seq(), "--prefetch=nextline")
    l1 = r["levels"][0]
    assert l1["misses"] == LINES // 2 and l1["pf_useful"] == LINES // 2


def test_stride_prefetcher_large_stride(model_test):
    # 256-byte stride by one instruction: the stride table learns it; a next-line prefetcher cannot help
    r = sim(model_test, walk(BASE, 10000, 256), "--prefetch=stride")
    assert r["levels"][0]["misses"] <= 4 and r["levels"][0]["pf_useful"] >= 9990  # 4: training
    r = sim(model_test, walk(BASE, 10000, 256), "--prefetch=nextline")
    assert r["levels"][0]["misses"] == 10000 and r["levels"][0]["pf_useless"] >= 9000


def test_useless_prefetches_counted(model_test):
    # every access misses a new line 8 KiB apart: each next-line prefetch is wasted
    r = sim(model_test, walk(BASE, 5000, 8192), "--prefetch=nextline", "--tlb=no")
    l1 = r["levels"][0]
    assert l1["pf_issued"] == 5000 and l1["pf_useful"] == 0
    assert l1["pf_useless"] + l1["pf_resident"] == 5000


def test_cc_block_prefetchers_only_in_pool_range(model_test):
    pool = f"--pool-range={BASE:#x}-{BASE + 0x100000:#x}"
    inside = walk(BASE, 4096, 16)  # 64 KiB inside the pool range: 1024 lines, 256 cc-blocks of 256 B
    outside = walk(BASE + 0x200000, 4096, 16)
    r = sim(model_test, inside, "--prefetch=cc-all", pool, "--cc-block=256")
    assert r["levels"][0]["misses"] == 256 and r["levels"][0]["pf_useful"] == 768
    r = sim(model_test, inside, "--prefetch=cc-one", pool)
    assert r["levels"][0]["misses"] == 512
    r = sim(model_test, outside, "--prefetch=cc-all", pool)
    assert r["levels"][0]["misses"] == 1024 and r["levels"][0]["pf_issued"] == 0


def test_prefetch_into_l2(model_test):
    r = sim(model_test, seq(), "--prefetch=tagged", "--pf-level=2")
    assert r["levels"][0]["misses"] == LINES  # L1 not filled
    assert r["levels"][1]["misses"] <= 2 and r["levels"][1]["pf_useful"] >= LINES - 3


def test_attribution_buckets(model_test):
    # the driver's buckets are (addr >> 20) & 3
    r = sim(model_test, walk(BASE, 100, 64) + walk(BASE + 0x100000, 30, 64) + walk(BASE + 0x300000, 7, 64))
    assert [b["misses"][0] for b in r["buckets"]] == [100, 30, 0, 7]


def test_bad_options_rejected(model_test):
    for bad in ("--L1=48K,12,48", "--prefetch=magic", "--levels=4", "--page-size=3000"):
        r = subprocess.run([str(model_test), bad], input=b"", capture_output=True)
        assert r.returncode == 2, bad


# ----------------------------------------------------------------------------- end to end


pytestmark_vg = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


@pytestmark_vg
def test_simulate_agrees_with_cachegrind(build_dir, tmp_path):
    """`heaplayout simulate --cachegrind-geometry` end to end against cachegrind itself."""
    prog = [str(paths.workload_binary("treeadd")), "16", "20"]
    out = tmp_path / "r.json"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "heaplayout.cli", "simulate", "--cachegrind-geometry", "--json", str(out), "--", *prog]
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert "checksum" in p.stdout.decode()  # the program's own output passes through
    r = json.loads(out.read_text())
    assert [lv["name"] for lv in r["levels"]] == ["L1", "LL"] and r["tlb"] == []
    cg = run_cachegrind(prog, {})
    assert r["levels"][0]["misses"] > 10000
    assert rel_diff(r["levels"][0]["misses"], cg["D1"]) < 0.02
    assert rel_diff(r["levels"][1]["misses"], cg["LL"]) < 0.02
    assert rel_diff(r["refs"], cg["refs"]) < 0.02


@pytestmark_vg
def test_simulate_cli_callsite_pools(build_dir, tmp_path):
    prog = [str(paths.workload_binary("treeadd")), "14", "5"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = tmp_path / "s.json"
    cmd = [sys.executable, "-m", "heaplayout.cli", "simulate", "--policy", "callsite", "--prefetch", "cc-all",
           "--json", str(out), "--", *prog]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    assert r.returncode == 0, r.stderr.decode()
    text = r.stdout.decode()
    assert "L1" in text and "DTLB" in text and "time estimate" in text
    res = json.loads(out.read_text())
    lo, hi = res["config"]["pool_range"]
    assert hi > lo > 0  # the runtime's range was detected
    pools = [p for p in res["pools"] if p["pool"] >= 0]
    assert pools and sum(p["misses"][0] for p in pools) > 0
    assert res["levels"][0]["pf_issued"] > 0  # cc-all fires on misses inside pool chunks


@pytestmark_vg
def test_pool_attribution_reads_no_unmapped_header(build_dir):
    """Per-pool attribution reads the chunk header of an address in the pool range. The range
    is reserved as it grows, so a stride prefetch past its last chunk named a line whose header
    was not mapped (`simulate --policy callsite --prefetch stride` on health died with a
    SIGSEGV); here the whole address space is the range, so nearly every header is unmapped."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "2000", "2"]
    r = run_simulation(prog, SimOptions(contexts=False, model={"pool_range": "0x10000-0x7fffffffffff"}),
                       stdout=subprocess.PIPE)
    assert r["valgrind_exit"] == 0 and "spacing" in r["program_stdout"]
    assert [p["pool"] for p in r["pools"]] == [-2]  # in the range, in no chunk
    assert r["pools"][0]["misses"][0] == r["levels"][0]["misses"] > 0


@pytestmark_vg
def test_simulate_cli_reports_the_share_of_the_possible_gain(build_dir, tmp_path):
    """With --oracle and a runtime policy, the report says what share of the gain from the
    allocator alone to the oracle the layout obtained, from a baseline run of the allocator.
    sim_objects allocates hot and cold objects interleaved from two sites: per-site pools
    separate them, so callsite obtains a large share; glibc itself has no baseline. Page
    faults are left out of the estimate (--fault-cost 0): on this short run they outweigh the
    misses, and the oracle's stream still touches the glibc heap pages the allocator writes
    its headers on before any object lives there."""
    from heaplayout.simulate import gain_share
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "20000", "6"]
    env = dict(os.environ)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = tmp_path / "s.json"
    cmd = [sys.executable, "-m", "heaplayout.cli", "simulate", "--policy", "callsite", "--oracle", "first-touch",
           "--fault-cost", "0", "--json", str(out), "--", *prog]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    res = json.loads(out.read_text())
    base, o = res["baseline"], res["oracle"]
    assert base["layout"] == "glibc"
    assert o["gain_share"] == gain_share(base["estimate"], res["estimate"], o["estimate"])
    assert 0.3 < o["gain_share"] < 1.5
    assert f"obtained {100 * o['gain_share']:.0f}% of the possible gain over glibc alone" in r.stdout.decode()
    plain = subprocess.run([*cmd[:4], "--oracle", "first-touch", "--fault-cost", "0", "--", *prog], env=env,
                           capture_output=True, timeout=300)
    assert plain.returncode == 0 and "possible gain" not in plain.stdout.decode()


@pytestmark_vg
def test_contexts_and_oracle_on_known_pattern(build_dir, tmp_path):
    """sim_objects: 20000 hot and 20000 cold 64-byte objects allocated interleaved from two
    call sites; only the hot ones are walked (10 passes)."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "20000", "10"]
    out = tmp_path / "o.json"
    r = run_simulation(prog, SimOptions(oracle=True), json_out=out, stdout=subprocess.PIPE)
    ctx = {c["where"].split(": ", 1)[-1].split(" ")[0]: c for c in r["contexts"]}
    hot, cold = ctx["alloc_hot"], ctx["alloc_cold"]
    assert hot["allocs"] == 20000 and cold["allocs"] == 20000
    assert hot["bytes"] == 20000 * 64
    assert "sim_objects.c" in hot["where"]
    # the walks miss on hot objects only; cold ones miss once per line when touched at the end
    assert hot["misses"][0] > 5 * cold["misses"][0]
    assert cold["misses"][0] <= 2 * 20000
    assert hot["accesses"] == 20000 * (1 + 2 * 10)  # one store at allocation, two loads per pass
    # the oracle packs the hot objects densely (first touch) away from the cold ones
    o = r["oracle"]
    assert o["packed_bytes"] >= 40000 * 64
    assert o["levels"][0]["misses"] < 0.7 * r["levels"][0]["misses"]
    assert o["cycles"] < r["cycles"]
    assert o["metadata_refs_dropped"] > 0  # glibc's chunk headers are not in the oracle's stream


@pytestmark_vg
@pytest.mark.parametrize("model", [{}, {"prefetch": "stride"}])
def test_oracle_helper_gives_the_in_process_counts(build_dir, model):
    """The oracle's helper process replays the same events through the same code: every count
    of the result, the contexts' access counts included, equals the in-process oracle's."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "5000", "4"]
    hot = SimOptions(oracle=True, model=model)
    runs = {h: run_simulation(prog, SimOptions(oracle=True, model=model, oracle_helper=h), stdout=subprocess.PIPE)
            for h in (True, False)}
    assert runs[True]["oracle"].pop("helper") is True and runs[False]["oracle"].pop("helper") is False
    assert runs[True]["oracle"]["levels"][0]["misses"] > 0
    assert any(c["accesses"] > 0 for c in runs[True]["contexts"])
    for key in ("oracle", "contexts", "levels", "tlb", "refs", "cycles"):
        assert runs[True][key] == runs[False][key], key
    # the hot-first variant, from the first run's hottest context
    ra = max(runs[True]["contexts"], key=lambda c: c["accesses"])["ra"]
    hot = {h: run_simulation(prog, SimOptions(oracle=True, oracle_hot=[ra], model=model, oracle_helper=h),
                             stdout=subprocess.PIPE)["oracle"] for h in (True, False)}
    hot[True].pop("helper"), hot[False].pop("helper")
    assert hot[True] == hot[False] and hot[True]["layout"] == "hot-first"


@pytestmark_vg
def test_oracle_helper_is_no_child_of_the_client(build_dir):
    """A client that waits until it has no children left finishes, with its own output and
    exit code, and the oracle is reported."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_fork_wait"), "3"]
    native = subprocess.run(prog, capture_output=True, text=True, timeout=60)
    assert native.returncode == 0 and "reaped 3 failed 0" in native.stdout
    r = run_simulation(prog, SimOptions(oracle=True), stdout=subprocess.PIPE)
    assert r["valgrind_exit"] == 0 and r["program_stdout"] == native.stdout
    assert r["oracle"]["helper"] is True and r["oracle"]["refs"] > 0
    # the children ran the tool's exit too, each into its own file: this is the parent's
    # result (it allocated 5000 list nodes after reaping them; a child at most 3000)
    assert r["objects"] >= 5000


@pytestmark_vg
@pytest.mark.parametrize("allocator", ["glibc", "jemalloc", "mimalloc", "tcmalloc"])
def test_allocation_calls_seen_by_the_tool(build_dir, allocator):
    """sim_cxx_contexts: 1000 allocations from each of seven sites (new, new[], malloc, calloc,
    posix_memalign, realloc, and malloc 13 frames deep after operator new threw bad_alloc 20
    times). Every allocator defines its own entry points (jemalloc, mimalloc and tcmalloc
    their own operator new); each object must be charged to the program's call site, once."""
    from heaplayout.allocators import available_allocators
    from heaplayout.runtime_env import allocator_env
    if allocator not in available_allocators():
        pytest.skip(f"{allocator} is not installed")
    # mimalloc's operator new aborts on an impossible size instead of throwing
    throws = allocator != "mimalloc"
    prog = [str(build_dir / "tests" / "simulator" / "sim_cxx_contexts"), "1000", "throw" if throws else "no"]
    env = {**os.environ, **allocator_env(allocator)}
    native = subprocess.run(prog, capture_output=True, text=True, timeout=60, env=env).stdout
    assert f"thrown {20 if throws else 0} " in native
    r = run_simulation(prog, SimOptions(oracle=True, allocator=allocator, top_contexts=100), stdout=subprocess.PIPE)
    assert r["valgrind_exit"] == 0 and r["program_stdout"] == native
    by_site = {}
    for c in r["contexts"]:
        name = c["where"].split(": ", 1)[-1].split("(")[0]
        by_site[name] = by_site.get(name, 0) + c["allocs"]
    for site in ("site_new", "site_new_array", "site_malloc", "site_calloc", "site_memalign", "site_realloc",
                 "site_deep"):
        assert by_site.get(site) == 1000, (site, by_site)
    # no allocation is charged to the allocator's or libstdc++'s own calls (operator new -> malloc)
    assert not any("new_op" in c["where"] or "libstdc++" in c["where"] and c["allocs"] > 2 for c in r["contexts"])


@pytestmark_vg
def test_tracking_leaves_the_runtime_layout_alone(build_dir):
    """Our runtime places by the return address of the program's call. Tracking objects must
    not put a frame in between (a malloc wrapper did: every object went to one pool)."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "5000", "2"]
    plain = run_simulation(prog, SimOptions(policy="callsite"), stdout=subprocess.PIPE)
    tracked = run_simulation(prog, SimOptions(policy="callsite", contexts=True), stdout=subprocess.PIPE)
    pooled = [p["pool"] for p in plain["pools"] if p["pool"] >= 0]
    assert len(pooled) >= 2  # the hot and the cold site have pools of their own
    assert [p["pool"] for p in tracked["pools"]] == [p["pool"] for p in plain["pools"]]
    for key in ("levels", "tlb"):
        assert [lv["misses"] for lv in tracked[key]] == [lv["misses"] for lv in plain[key]]
    assert tracked["program_stdout"] == plain["program_stdout"]


@pytestmark_vg
def test_malloc_is_not_replaced(build_dir):
    """glibc serves the client under hlsim: consecutive hot objects sit 2 x 80 bytes apart
    (64-byte requests in 80-byte chunks, interleaved with the cold ones)."""
    prog = [str(build_dir / "tests" / "simulator" / "sim_objects"), "1000", "1"]
    r = run_simulation(prog, SimOptions(contexts=True), stdout=subprocess.PIPE)
    native = subprocess.run(prog, capture_output=True, text=True).stdout
    assert "spacing 160 " in native
    assert r["valgrind_exit"] == 0
    assert "spacing 160 " in r["program_stdout"]  # valgrind's replacement malloc would space them otherwise


@pytestmark_vg
def test_hot_first_oracle_two_runs(build_dir):
    """treeadd writes each cold annotation right after its tree node: the first-touch oracle
    keeps them interleaved, the hot-first oracle packs the nodes apart and halves the misses."""
    from heaplayout.simulate import run_with_oracles
    prog = [str(paths.workload_binary("treeadd")), "15", "4"]
    r = run_with_oracles(prog, SimOptions(), stdout=subprocess.DEVNULL)
    first, hot = r["oracle"], r["oracle_hot"]
    assert first["layout"] == "dense first-touch" and hot["layout"] == "hot-first"
    assert len(hot["hot_contexts"]) >= 2
    assert first["levels"][0]["misses"] <= r["levels"][0]["misses"]
    assert hot["levels"][0]["misses"] < 0.7 * first["levels"][0]["misses"]


def test_valgrind_runs_threads_in_a_fixed_order(monkeypatch, build_dir, tmp_path):
    # simulate and its cachegrind twin ask valgrind for its ticket lock, without which a
    # multi-threaded program's threads take turns in whatever order the kernel wakes them
    # (perl-threads: LL misses 14.7M-15.8M over three runs, 18.1M +-0.2% with the lock)
    import heaplayout.simulate as sim

    seen: list[list[str]] = []

    class FakeProc:
        pid = 1
        returncode = 0

        def __init__(self, argv, **_kw):
            seen.append(list(argv))

        def communicate(self):
            return None, None

        def wait(self):
            return 0

    monkeypatch.setattr(sim.subprocess, "Popen", FakeProc)
    monkeypatch.setattr(sim.subprocess, "run", lambda argv, **_kw: seen.append(list(argv)) or subprocess.CompletedProcess(argv, 0))
    with pytest.raises(Exception):
        run_simulation(["/bin/true"], SimOptions())
    with pytest.raises(Exception):
        run_cachegrind(["/bin/true"], {})
    assert len(seen) == 2
    for argv in seen:
        assert "--fair-sched=yes" in argv
        assert argv.index("--fair-sched=yes") < next(i for i, a in enumerate(argv) if a.startswith("--tool="))


def test_allocator_clocks_stretch_with_the_simulation(monkeypatch, tmp_path):
    # mimalloc's decommit delays and jemalloc's decay time are wall-clock times: a run 50x
    # slower returned memory mimalloc natively keeps (lua5.4: 74,482 simulated page faults
    # on mimalloc against ~30,700 natively). The simulated run gets them scaled.
    from heaplayout.sim_clocks import slowed_clock_env

    mi = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
    je = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
    env = slowed_clock_env(mi, {}, 50)
    assert env == {"MIMALLOC_DECOMMIT_DELAY": "1250", "MIMALLOC_SEGMENT_DECOMMIT_DELAY": "25000",
                   "MIMALLOC_DECOMMIT_EXTEND_DELAY": "50"}
    assert "MIMALLOC_DECOMMIT_DELAY" not in slowed_clock_env(mi, {"MIMALLOC_DECOMMIT_DELAY": "7"}, 50)
    assert slowed_clock_env("/x/libheaplayout.so:" + je, {}, 50) == {"MALLOC_CONF": "dirty_decay_ms:500000"}
    assert slowed_clock_env(je, {"MALLOC_CONF": "narenas:2"}, 50) == {"MALLOC_CONF": "narenas:2,dirty_decay_ms:500000"}
    assert slowed_clock_env(je, {"MALLOC_CONF": "dirty_decay_ms:5"}, 50) == {}
    assert slowed_clock_env(mi, {}, 1) == {} and slowed_clock_env("", {}, 50) == {}

    # and run_simulation hands them to valgrind, which passes them to the client
    import heaplayout.simulate as sim

    seen: list[dict] = []

    class FakeProc:
        pid = 1
        returncode = 0

        def __init__(self, argv, env=None, **_kw):
            seen.append(dict(env or {}))

        def communicate(self):
            return None, None

        def wait(self):
            return 0

    monkeypatch.setattr(sim.subprocess, "Popen", FakeProc)
    monkeypatch.delenv("MIMALLOC_SEGMENT_DECOMMIT_DELAY", raising=False)
    with pytest.raises(Exception):
        run_simulation(["/bin/true"], SimOptions(allocator="mimalloc"))
    with pytest.raises(Exception):
        run_simulation(["/bin/true"], SimOptions(allocator="mimalloc", clock_scale=1))
    assert seen[0].get("MIMALLOC_SEGMENT_DECOMMIT_DELAY") == "25000"
    assert "MIMALLOC_SEGMENT_DECOMMIT_DELAY" not in seen[1]
