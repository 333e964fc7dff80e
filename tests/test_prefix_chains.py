"""PreFix's identification by call chain (runtime/src/prefix.c, site_of): sites that share
one wrapper and differ only in frames further out, as every site of lua5.4 shares its
allocator function. The runtime walks only as far as the frames decide and keeps each
identified chain in the thread's cache; these tests check that every object still takes
exactly the slot the plan gives its (site, value), for chains answered from the cache, for
chains too long for it (through a recursion) and for chains that start in a skipped module
(strdup in libc), and that a chain met again is answered without walking the stack.

The plans are written here from tests/runtime/prefix_chain_test.c's disassembly (the return
address of each call), as tests/test_prefix_runtime.py does for one-frame sites."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import elf
from heaplayout.plan_format import Plan, PlanModule, SelectRule, write_plan
from heaplayout.plan_prefix import PrefixCounter, PrefixRecords, PrefixSite, PrefixSlot

SLOT = 64
KINDS = 8  # top_1, top_2, top_3, top_4, wrap from main, via_x from main, rec(DEPTH), strdup via dupper


@pytest.fixture(scope="module")
def program(build_dir: Path) -> Path:
    return build_dir / "tests" / "runtime" / "prefix_chain_test"


def ra(program: Path, fn: str, callee: str) -> int:
    return elf.call_return_addresses(program, fn, callee)[0]


def chain_plan(tmp: Path, program: Path, rounds: int) -> tuple[Path, dict[int, tuple[int, int]]]:
    """The plan, and for each kind of object its (site, objects of the site per round)."""
    W, X, Y = ra(program, "wrap", "malloc"), ra(program, "via_x", "wrap"), ra(program, "via_y", "wrap")
    rules = [
        (1, (W, X, ra(program, "top_1", "via_x"))),
        (2, (W, X, ra(program, "top_2", "via_x"))),
        (0, (W, Y)),  # top_4 (and any other caller of via_y): not a PreFix site
        (3, (W, Y, ra(program, "top_3", "via_y"))),
        (4, (W,)),  # the rest of the wrapper's callers: wrap and via_x called from main
        (5, (W, X, ra(program, "rec", "via_x"), ra(program, "rec", "rec"), ra(program, "main", "rec"))),
        (6, (ra(program, "dupper", "strdup"), ra(program, "main", "dupper"))),
    ]
    per_round = {1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 6: 1}  # site 4 takes two objects a round
    counters, slots, offset = [], [], 0
    for site, k in per_round.items():
        n = k * rounds
        counters.append(PrefixCounter(site, "all", n))
        slots += [PrefixSlot(site, v, site, offset + v * SLOT, SLOT) for v in range(n)]
        offset += n * SLOT
    pre = PrefixRecords(region_bytes=offset, region_align=16, counters=counters,
                        sites=[PrefixSite(s, s) for s in per_round],
                        rules=[SelectRule(label, tuple((0, f) for f in frames)) for label, frames in rules],
                        slots=slots)
    plan = Plan(strategy="prefix:hot", modules=[PlanModule(0, elf.build_id(program), str(program))],
                skips=["libc.so.6"], prefix=pre)
    path = tmp / "chains.plan"
    write_plan(plan, path)
    # kind -> (site, its position among the site's objects of a round); top_4: no site
    kinds = {0: (1, 0), 1: (2, 0), 2: (3, 0), 4: (4, 0), 5: (4, 1), 6: (5, 0), 7: (6, 0)}
    return path, kinds


def site_base(site: int, rounds: int) -> int:
    per_round = {1: 1, 2: 1, 3: 1, 4: 2, 5: 1, 6: 1}
    return sum(per_round[s] * rounds * SLOT for s in per_round if s < site)


def run(program: Path, tmp: Path, runtime_lib: Path | None, plan: Path | None, rounds: int, depth: int,
        addresses: bool = False):
    env = {"PREFIX_TEST_ADDR": "1"} if addresses else {}
    if plan is not None:
        env.update({"LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "plan", "HEAPLAYOUT_PLAN": str(plan),
                    "HEAPLAYOUT_STATS_JSON": str(tmp / "stats.json")})
    r = run_program([str(program), "chains", str(rounds), str(depth)], env_extra=env, timeout=60)
    assert r.returncode == 0, r.stderr.decode()
    return r


@pytest.mark.parametrize("depth", [3, 20])
def test_each_chain_takes_its_sites_slots(program, runtime_lib, tmp_path, depth):
    """depth 3: rec's chain decides in 6 steps, answered from the cache after its first walk;
    depth 20: 23 steps, more than the cache keeps, so it walks every time."""
    rounds = 300
    plan, kinds = chain_plan(tmp_path, program, rounds)
    plain = run(program, tmp_path, None, None, rounds, depth)
    placed = run(program, tmp_path, runtime_lib, plan, rounds, depth)
    assert placed.stdout == plain.stdout
    st = json.loads((tmp_path / "stats.json").read_text())["prefix"]
    assert st["taken"] == 7 * rounds  # every object but top_4's
    assert st["refused_site"] == st["refused_size"] == st["refused_busy"] == 0

    r = run(program, tmp_path, runtime_lib, plan, rounds, depth, addresses=True)
    objs = [(int(k), int(a, 16)) for k, a in re.findall(rb"^(\d) 0x([0-9a-f]+)$", r.stdout, re.M)]
    assert len(objs) == KINDS * rounds
    base = objs[0][1] - site_base(1, rounds)  # round 0's top_1 object: site 1, value 0
    for i, (kind, addr) in enumerate(objs):
        rnd = i // KINDS
        if kind not in kinds:  # top_4: a label-0 chain, outside the region
            assert not 0 <= addr - base < site_base(7, rounds)
            continue
        site, pos = kinds[kind]
        per = 2 if site == 4 else 1
        assert addr - base == site_base(site, rounds) + (rnd * per + pos) * SLOT, (rnd, kind)


def test_a_chain_met_again_is_not_walked_again(program, runtime_lib, tmp_path):
    """Each chain walks once (top_4's, which decides "no site", too; so does what libc
    allocates for stdio, from a skipped module), whatever the number of rounds; rec's chain
    through 20 recursive frames is too long to keep and walks on every allocation."""
    rounds = 300
    plan, _ = chain_plan(tmp_path, program, rounds)
    run(program, tmp_path, runtime_lib, plan, rounds, 3)
    cached = json.loads((tmp_path / "stats.json").read_text())["prefix"]["identification_walks"]
    assert KINDS <= cached <= KINDS + 2
    run(program, tmp_path, runtime_lib, plan, rounds, 20)
    walks = json.loads((tmp_path / "stats.json").read_text())["prefix"]["identification_walks"]
    assert walks == cached - 1 + rounds
