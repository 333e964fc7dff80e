"""`heaplayout profile` (the hlprof Valgrind tool) on purpose-built programs whose profile is
known exactly. The programs are tests/profiler/*.c*; expected values are derived by hand in
the comments below from hp_exact.c (N = 500)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths
from heaplayout.profile_merge import merge_profiles
from heaplayout.profile_reader import read_profile
from heaplayout.profile_writer import write_profile

N = 500
pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")


@pytest.fixture(scope="module")
def progs(build_dir: Path) -> Path:
    d = build_dir / "tests" / "profiler"
    lib = build_dir / "profiler" / "lib" / "hlprof-amd64-linux"
    if not lib.exists() or not (d / "hp_exact").exists():
        pytest.fail(f"profiler or its test programs not built in {build_dir}: run scripts/build.sh")
    return d


def profile(tmp_path: Path, argv: list[str], *opts: str, name: str = "p.prof") -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / name
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PYTHONPATH"] = str(paths.REPO_ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, "-m", "heaplayout.cli", "profile", "-o", str(out), *opts, "--", *argv]
    r = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    return r, out


def frame_names(p, ctx) -> list[str]:
    return [(p.frame_symbol(m, off).function if p.frame_symbol(m, off) else None) for m, off in ctx.frames]


def contexts_by_site(p) -> tuple:
    """The contexts of hp_exact: (A from alloc_a, B from alloc_b)."""
    a = [c for c in p.contexts.values() if frame_names(p, c)[:1] == ["alloc_a"]]
    b = [c for c in p.contexts.values() if frame_names(p, c)[:1] == ["alloc_b"]]
    assert len(a) == 1 and len(b) == 1, [frame_names(p, c) for c in p.contexts.values()]
    return a[0], b[0]


def nm_symbols(binary: Path) -> dict[str, int]:
    out = subprocess.run(["nm", str(binary)], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tT":
            syms[parts[2]] = int(parts[0], 16)
    return syms


def return_address_of_malloc_call(binary: Path, function: str) -> int:
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    body = out.split(f"<{function}>:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    insns = [ln for ln in body if ":" in ln]
    (i,) = [k for k, ln in enumerate(insns) if "call" in ln and "<malloc" in ln]
    return int(insns[i + 1].split(":")[0], 16)


def function_at(syms: dict[str, int], offset: int) -> str:
    best = max((a, n) for n, a in syms.items() if a <= offset)
    return best[1]


def test_exact_counts(tmp_path: Path, progs: Path) -> None:
    r, out = profile(tmp_path, [str(progs / "hp_exact")])
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == f"{N * (N - 1) // 2}\n".encode()  # the program's own output, untouched
    p = read_profile(out)
    assert p.complete and p.version == 1 and p.has_adjacent_links
    assert len(p.contexts) == 2  # nothing else in the program allocates
    ca, cb = contexts_by_site(p)
    # contexts: innermost frame is the malloc call in alloc_a/alloc_b, then main; offsets
    # are module-relative and fall inside the functions per the binary's symbol table
    syms = nm_symbols(progs / "hp_exact")
    for ctx, fn in ((ca, "alloc_a"), (cb, "alloc_b")):
        assert frame_names(p, ctx) == [fn, "main"]
        mod = p.modules[ctx.frames[0][0]]
        assert Path(mod.path).name == "hp_exact" and mod.build_id and not mod.system
        assert function_at(syms, ctx.frames[0][1]) == fn
        assert function_at(syms, ctx.frames[1][1]) == "main"
        # frames are Valgrind's: return address - 1, inside the call instruction
        assert ctx.frames[0][1] + 1 == return_address_of_malloc_call(progs / "hp_exact", fn)
        sym = p.frame_symbol(*ctx.frames[0])
        assert sym.file and sym.file.endswith("hp_exact.c") and sym.line > 0
    assert ca.kind == "m" and cb.kind == "m"
    # allocation-order neighbours: A0 B0 A1 B1 ... gives N times A->B and N-1 times B->A
    assert p.has_neighbours and p.neighbours == {(ca.id, cb.id): N, (cb.id, ca.id): N - 1}

    # objects: A_i has id 2i+1, B_i id 2i+2, instance i; phase 0 stores once into each right
    # after allocating it (clock: A_i allocated at 2i, B_i at 2i+1); phase 1 stores A_i->b
    # (clock 2N..3N); phase 2 loads A_i->b and B_i->y, then frees B_i and A_i at 3N+2i+2.
    objs = {o.id: o for o in p.objects}
    assert len(objs) == 2 * N
    for i in range(N):
        a, b = objs[2 * i + 1], objs[2 * i + 2]
        assert (a.context, a.instance, a.size, a.alloc_time, a.free_time) == (ca.id, i, 16, 2 * i, 3 * N + 2 * i + 2)
        assert (b.context, b.instance, b.size, b.alloc_time, b.free_time) == (cb.id, i, 16, 2 * i + 1, 3 * N + 2 * i + 2)
        assert (a.loads, a.stores, a.load_bytes, a.store_bytes) == (1, 2, 8, 16)
        assert (b.loads, b.stores, b.load_bytes, b.store_bytes) == (1, 1, 8, 8)
    assert (ca.objects, ca.bytes, ca.loads, ca.stores) == (N, 16 * N, N, 2 * N)
    assert (cb.objects, cb.bytes, cb.loads, cb.stores) == (N, 16 * N, N, N)
    assert p.summary["heap_accesses"] == 5 * N and p.summary["objects"] == 2 * N

    # affinity (A = 128, all accesses 8 bytes, so each access sees the 15 before it): with the
    # allocation order A0 B0 A1 B1 ..., two objects are co-allocatable only when their ids
    # differ by 1 (A_i-B_i, B_i-A_i+1) or by 2 within one context (A_i-A_i+1, B_i-B_i+1).
    #   phase 0, order A0 B0 A1 B1 ...: (A,B) 2N-1, (A,A) N-1, (B,B) N-1
    #   phase 1, order A0 A1 A2 ...:    (A,A) N-1
    #   phase 2, order A0 B0 A1 B1 ...: (A,B) 2N-1, (A,A) N-1, (B,B) N-1
    key = lambda x, y: (min(x, y), max(x, y))
    assert p.affinity == {
        key(ca.id, cb.id): 2 * (2 * N - 1),
        (ca.id, ca.id): 3 * (N - 1),
        (cb.id, cb.id): 2 * (N - 1),
    }
    # pointer edges: A_i->b = B_i, one store each at offset 0; A_i and B_i were allocated
    # one after the other (ids 2i+1, 2i+2), so every link joins co-allocatable objects
    assert p.pointer_edges == {(ca.id, 0, cb.id): N}
    assert p.adjacent_links == {(ca.id, 0, cb.id): N}
    # reference stream: 1..2N, then the A ids, then 1..2N again
    expected_stream = list(range(1, 2 * N + 1)) + list(range(1, 2 * N, 2)) + list(range(1, 2 * N + 1))
    assert p.stream == expected_stream and not p.stream_truncated


def test_affinity_distance_and_stream_cap(tmp_path: Path, progs: Path) -> None:
    # A = 16: an 8-byte access only sees the one entry before it (8 + 8 <= 16):
    # phase 0 (A,B) 2N-1; phase 1, order A0 A1 ..., (A,A) N-1; phase 2 (A,B) 2N-1.
    r, out = profile(tmp_path, [str(progs / "hp_exact")], "--affinity-distance", "16", "--stream-max", "100",
                     "--progress", "1000")
    assert r.returncode == 0, r.stderr.decode()
    assert r.stderr.count(b"hlprof: progress: ") == 2  # at 1000 and 2000 of 2500 heap accesses
    p = read_profile(out)
    ca, cb = contexts_by_site(p)
    key = (min(ca.id, cb.id), max(ca.id, cb.id))
    assert p.affinity == {key: 2 * (2 * N - 1), (ca.id, ca.id): N - 1}
    assert p.stream == list(range(1, 101)) and p.stream_truncated
    assert p.summary["stream_dropped"] == 5 * N - 100
    assert "TRUNCATED" in _show(out)


def test_stripped_nofp_binary(tmp_path: Path, progs: Path) -> None:
    stripped = progs / "hp_exact_nofp_stripped"
    assert "alloc_a" not in nm_symbols_or_empty(stripped)
    r, out = profile(tmp_path, [str(stripped)])
    assert r.returncode == 0, r.stderr.decode()
    p = read_profile(out)
    assert len(p.contexts) == 2
    syms = nm_symbols(progs / "hp_exact_nofp")  # same code, symbols kept
    inner = sorted(function_at(syms, c.frames[0][1]) for c in p.contexts.values())
    assert inner == ["alloc_a", "alloc_b"]
    for c in p.contexts.values():
        assert len(c.frames) == 2 and function_at(syms, c.frames[1][1]) == "main"
        assert p.modules[c.frames[0][0]].path.endswith("hp_exact_nofp_stripped")
    assert sorted(c.objects for c in p.contexts.values()) == [N, N]
    assert sum(p.affinity.values()) == 2 * (2 * N - 1) + 3 * (N - 1) + 2 * (N - 1)


def nm_symbols_or_empty(binary: Path) -> dict[str, int]:
    r = subprocess.run(["nm", str(binary)], capture_output=True, text=True)
    return nm_symbols(binary) if r.returncode == 0 else {}


@pytest.mark.parametrize("mode,status", [("exit", 7), ("abort", -signal.SIGABRT), ("kill", -signal.SIGKILL)])
def test_exit_code_and_signal_pass_through(tmp_path: Path, progs: Path, mode: str, status: int) -> None:
    r, out = profile(tmp_path, [str(progs / "hp_exact"), mode])
    assert r.returncode == status, r.stderr.decode()
    assert r.stdout == f"{N * (N - 1) // 2}\n".encode()
    p = read_profile(out)
    # nothing was freed: every object is reported live, with its counts
    assert len(p.objects) == 2 * N and all(o.free_time is None for o in p.objects)
    assert p.summary["heap_accesses"] == 5 * N
    assert len(p.contexts) == 2


def test_cut_profile_is_readable(tmp_path: Path, progs: Path) -> None:
    """A run killed before exit leaves header and contexts: simulate by cutting the file."""
    r, out = profile(tmp_path, [str(progs / "hp_exact")])
    assert r.returncode == 0
    text = out.read_text()
    cut = tmp_path / "cut.prof"
    cut.write_text(text[: text.index("\nO ", text.index("\nO ") + 1000) + 7])  # ends mid-line
    p = read_profile(cut)
    assert not p.complete and len(p.contexts) == 2
    assert 0 < len(p.objects) < 2 * N
    ca, cb = contexts_by_site(p)
    assert ca.objects + cb.objects == len(p.objects)  # totals rebuilt from the freed objects
    assert "INCOMPLETE" in _show(cut)


def test_threads(tmp_path: Path, progs: Path) -> None:
    r, out = profile(tmp_path, [str(progs / "hp_threads")])
    assert r.returncode == 0, r.stderr.decode()
    T, M, R = 4, 200, 3
    assert r.stdout.strip() == str(sum(R * sum(i + k for i in range(M)) for k in range(T))).encode()
    p = read_profile(out)
    nodes = [c for c in p.contexts.values() if frame_names(p, c)[:1] == ["make_node()"]]
    assert len(nodes) == 1, [frame_names(p, c) for c in p.contexts.values()]
    c = nodes[0]
    assert c.kind == "n" and c.objects == T * M
    # per node: 2 stores when built; R walks of 2 loads each; 1 load when deleted
    assert (c.stores, c.loads) == (T * M * 2, T * M * (2 * R + 1))
    tids = {o.tid for o in p.objects if o.context == c.id}
    # allocated by the worker threads, never by main (Valgrind reuses ids of joined threads)
    assert tids and 1 not in tids
    per_thread = {t: sum(1 for o in p.objects if o.context == c.id and o.tid == t) for t in tids}
    assert all(n % M == 0 for n in per_thread.values())
    # each thread's own queue: consecutive nodes are affine in build, R walks and the delete
    # loop (5 * (M-1) pairs), plus a few pairs where a walk starts next to the build's tail
    w = p.affinity.get((c.id, c.id), 0)
    assert T * 5 * (M - 1) <= w <= T * (5 * (M - 1) + 10)
    assert p.pointer_edges.get((c.id, 0, c.id)) == T * (M - 1)
    kinds = {cc.kind for cc in p.contexts.values()}
    assert "N" in kinds  # new long[T]


def test_merge_adds_counts(tmp_path: Path, progs: Path) -> None:
    _, a = profile(tmp_path, [str(progs / "hp_exact")], name="a.prof")
    _, b = profile(tmp_path, [str(progs / "hp_exact_nofp")], name="b.prof")
    _, c = profile(tmp_path, [str(progs / "hp_exact")], name="c.prof")
    env = dict(os.environ, PYTHONPATH=str(paths.REPO_ROOT))
    merged = tmp_path / "m.prof"
    r = subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "merge", str(a), str(c), "-o", str(merged)],
                       env=env, capture_output=True)
    assert r.returncode == 0, r.stderr.decode()
    pa, pm = read_profile(a), read_profile(merged)
    assert pm.complete and pm.header["merged_runs"] == "2"
    assert len(pm.contexts) == 2
    ca, cb = contexts_by_site(pm)
    assert (ca.objects, ca.loads, ca.stores) == (2 * N, 2 * N, 4 * N)
    assert sum(pm.affinity.values()) == 2 * sum(pa.affinity.values())
    assert sum(pm.pointer_edges.values()) == 2 * N
    assert len(pm.objects) == 4 * N and {o.run for o in pm.objects} == {0, 1}
    assert len(pm.stream) == 2 * len(pa.stream)
    assert pm.summary["heap_accesses"] == 10 * N
    # merging twice more gives run numbers 0..2 and stays readable after a write/read cycle
    again = merge_profiles([pm, pa])
    write_profile(again, tmp_path / "again.prof")
    pr = read_profile(tmp_path / "again.prof")
    assert {o.run for o in pr.objects} == {0, 1, 2} and pr.header["merged_runs"] == "3"
    # a different binary is refused unless forced
    r = subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "merge", str(a), str(b), "-o",
                        str(tmp_path / "x.prof")], env=env, capture_output=True)
    assert r.returncode != 0 and b"different binaries" in r.stderr


def _show(path: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(paths.REPO_ROOT))
    r = subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "show", str(path)], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_show(tmp_path: Path, progs: Path) -> None:
    _, out = profile(tmp_path, [str(progs / "hp_exact")])
    text = _show(out)
    assert "contexts: 2" in text and "objects: 1000" in text
    assert "alloc_a (hp_exact.c:" in text and "main (hp_exact.c:" in text
    assert "affinity edges: 3" in text and "pointer edges: 1" in text
    assert f"stream: {5 * N} entries" in text


def test_missing_build_message(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(paths.REPO_ROOT), HEAPLAYOUT_BUILD_DIR=str(tmp_path))
    r = subprocess.run([sys.executable, "-m", "heaplayout.cli", "profile", "--", "true"], env=env,
                       capture_output=True, text=True)
    assert r.returncode == 2 and "scripts/build.sh" in r.stderr


def test_recursion_reduced(tmp_path: Path, progs: Path) -> None:
    # build() recurses 60 levels (deeper than the first, short unwind): level 0 is called from
    # main, levels 1..60 from build itself; reduced, they are two contexts ending in main
    r, out = profile(tmp_path, [str(progs / "hp_recursive"), "60"])
    assert r.returncode == 0, r.stderr.decode()
    p = read_profile(out)
    shapes = sorted((frame_names(p, c), c.objects) for c in p.contexts.values())
    assert shapes == [(["new_node", "build", "build", "main"], 60), (["new_node", "build", "main"], 1)]


class _Lcg:
    """The LCG of tests/profiler/hp_affinity_model.c."""

    def __init__(self) -> None:
        self.x = 12345

    def next(self, n: int) -> int:
        self.x = (self.x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.x >> 33) % n


def affinity_reference(sites: list[int], accesses: list[tuple[int, int]], distance: int) -> dict:
    """HALO's affinity rules written plainly (a list for the queue, a set per walk) for objects
    allocated in order with the given site ids, accessed as (object, bytes)."""

    def coallocatable(u: int, v: int) -> bool:
        lo, hi = min(u, v), max(u, v)
        return all(sites[k] not in (sites[u], sites[v]) for k in range(lo + 1, hi))

    queue: list[tuple[int, int]] = []
    graph: dict = {}
    walk: dict = {}  # site -> pairs of its own objects, affine but not co-allocatable
    for u, size in accesses:
        if queue and queue[-1][0] == u:
            continue
        seen: set[int] = set()
        dist = size
        for v, vsize in reversed(queue):
            dist += vsize
            if dist > distance:
                break
            if v == u or v in seen:
                continue
            seen.add(v)
            if not coallocatable(u, v):
                if sites[u] == sites[v]:
                    walk[sites[u]] = walk.get(sites[u], 0) + 1
                continue
            key = (min(sites[u], sites[v]), max(sites[u], sites[v]))
            graph[key] = graph.get(key, 0) + 1
        queue.append((u, size))
    return graph, walk


@pytest.mark.parametrize("distance", [32, 128])
def test_affinity_matches_reference_model(tmp_path: Path, progs: Path, distance: int) -> None:
    m, k, t, obj = 64, 4, 20000, 32   # as in hp_affinity_model.c
    rng = _Lcg()
    sites = [rng.next(k) for _ in range(m)]
    accesses = []
    for _ in range(t):
        o = rng.next(6) if rng.next(2) else rng.next(m)
        size = 1 << rng.next(4)
        rng.next(obj // size)   # offset
        rng.next(2)             # load or store
        accesses.append((o, size))
    expected, expected_walk = affinity_reference(sites, accesses, distance)

    r, out = profile(tmp_path, [str(progs / "hp_affinity_model")], "--affinity-distance", str(distance))
    assert r.returncode == 0, r.stderr.decode()
    p = read_profile(out)
    ctx_of_site = {}
    for c in p.contexts.values():
        names = frame_names(p, c)
        if names and names[0] and names[0].startswith("alloc") and names[0][5:].isdigit():
            ctx_of_site[c.id] = int(names[0][5:])
    assert sorted(ctx_of_site.values()) == sorted(set(sites))
    got = {}
    for (x, y), w in p.affinity.items():
        if x in ctx_of_site and y in ctx_of_site:
            a, b = ctx_of_site[x], ctx_of_site[y]
            got[(min(a, b), max(a, b))] = w
    assert got == expected
    assert sum(p.affinity.values()) == sum(expected.values())   # nothing else on the heap
    # walk weights (R records): same-site pairs that only co-allocatability rejected
    assert {ctx_of_site[x]: n for x, n in p.walk.items() if x in ctx_of_site} == expected_walk
    assert expected_walk and sum(p.walk.values()) == sum(expected_walk.values())


def test_vector_stores_of_pointers(tmp_path: Path, progs: Path) -> None:
    """16- and 32-byte stores (two or four pointer fields filled at once) count one edge per
    8-byte lane; links between cells allocated one after another are co-allocatable, links
    from a cell to a payload allocated long before it, or to itself, are not."""
    vn = 300
    r, out = profile(tmp_path, [str(progs / "hp_vecstore")])
    assert r.returncode == 0, r.stderr.decode()
    avx = r.stdout.decode().strip() == "avx 1"
    p = read_profile(out)
    (pay,) = [c.id for c in p.contexts.values() if frame_names(p, c)[:1] == ["alloc_payload"]]
    (cell,) = [c.id for c in p.contexts.values() if frame_names(p, c)[:1] == ["alloc_cell"]]
    rounds = 2 if avx else 1
    expected = {(cell, 0, pay): rounds * vn, (cell, 8, cell): rounds * (vn - 1)}
    if avx:
        expected |= {(cell, 16, pay): vn, (cell, 24, cell): vn}
    assert {k: v for k, v in p.pointer_edges.items() if k[0] == cell} == expected
    assert p.adjacent_links.get((cell, 8, cell)) == rounds * (vn - 1)
    assert p.adjacent_links.get((cell, 0, pay), 0) == 0 and p.adjacent_links.get((cell, 24, cell), 0) == 0
    assert p.contexts[cell].stores == rounds * vn
    assert p.contexts[cell].store_bytes == vn * (16 + (32 if avx else 0))


def test_runs_of_accesses_to_one_object(tmp_path: Path, progs: Path) -> None:
    """hp_samepath.c: runs of accesses to one object of mixed sizes are counted exactly, pointer
    stores among them stay edges, a freed object's accesses end with it, and each thread's
    affinity queue sees its own accesses even when another thread touched the object last."""
    r, out = profile(tmp_path, [str(progs / "hp_samepath")])
    assert r.returncode == 0, r.stderr.decode()
    K, BIG, R = 300, 8192, 50
    p = read_profile(out)
    by_fn = {frame_names(p, c)[0]: c for c in p.contexts.values() if frame_names(p, c)[0].startswith("alloc_")}
    x, y, z, big, o, q = (by_fn[f"alloc_{n}"] for n in ("x", "y", "z", "big", "o", "p"))
    obj = {c.id: next(ob for ob in p.objects if ob.context == c.id) for c in (x, y, z, big, o, q)}
    # phase 1, per round: X loads 1+2+4+8 bytes, stores 1+2+4+8, a pointer, a long; Y one load
    assert (x.loads, x.stores, x.load_bytes, x.store_bytes) == (4 * K, 6 * K, 15 * K, 31 * K)
    assert (y.loads, y.stores, y.load_bytes, y.store_bytes) == (K, 1, 8 * K, 8)
    assert p.pointer_edges.get((x.id, 16, y.id)) == K
    key = lambda a, b: (min(a, b), max(a, b))
    assert p.affinity[key(x.id, y.id)] == 2 * K          # Y X Y X ... Y: 2K + 1 macro-accesses
    assert p.stream[:2 * K + 2] == [2] + [1, 2] * K + [3]
    # phase 2: Z's accesses are Z's, even where Z took X's place
    assert (z.loads, z.stores, z.load_bytes, z.store_bytes) == (2, 1, 16, 8)
    assert obj[z.id].alloc_time == obj[x.id].free_time == 11 * K + 1  # 10 X + 1 Y per round, y[0] = 1
    # phase 3: a big object is counted, outside the affinity graph
    assert (big.loads, big.stores, big.load_bytes, big.store_bytes) == (BIG // 8, BIG // 8, BIG, BIG)
    assert not [e for e in p.affinity if big.id in e]
    assert obj[big.id].free_time - obj[big.id].alloc_time == BIG // 4
    # phase 4: O loaded by both threads in turn; thread 2's queue sees O then P every turn
    assert (o.loads, o.stores) == (2 * R, R + 1) and (q.loads, q.stores) == (R, 1)
    assert 2 * R - 1 <= p.affinity.get(key(o.id, q.id), 0) <= 2 * R + 1
    assert p.summary["heap_accesses"] == sum(c.loads + c.stores for c in p.contexts.values())
