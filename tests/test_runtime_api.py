"""The public C API examples (runtime/examples) run and show what they promise."""

from __future__ import annotations

import re

from conftest import run_program


def test_pool_list_example(build_dir):
    r = run_program([str(build_dir / "runtime" / "examples" / "pool_list"), "20000"])
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    # 20000 values i*7 % 1000: sums computed independently here
    values = [i * 7 % 1000 for i in range(20000)]
    even = sum(v for v in values if v % 2 == 0)
    odd = sum(v for v in values if v % 2 == 1)
    assert f"even sum {even}, odd sum {odd}" in out
    m = re.search(r"pool (\d+), odd list in pool (\d+); (\d+) of (\d+) links join neighbours", out)
    assert m and m.group(1) == m.group(2) == "2"
    assert int(m.group(3)) == int(m.group(4)) > 0  # every node follows its predecessor


def test_cc_tree_example_colocates_children(build_dir):
    exe = str(build_dir / "runtime" / "examples" / "cc_tree")
    shares = {}
    for block in ("64", "256"):
        r = run_program([exe, "12"], env_extra={"HEAPLAYOUT_CC_BLOCK": block})
        assert r.returncode == 0, r.stderr
        out = r.stdout.decode()
        n = 2**12 - 1
        assert f"sum {n * (n - 1) // 2} over {n} nodes" in out
        m = re.search(r"cc-block (\d+) bytes: (\d+) of (\d+) left children", out)
        assert m and m.group(1) == block
        shares[block] = int(m.group(2)) / int(m.group(3))
    # a 32-byte slot: two per 64-byte block, eight per 256-byte block
    assert shares["64"] >= 0.45
    assert shares["256"] > shares["64"] and shares["256"] >= 0.75
