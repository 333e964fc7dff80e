"""`heaplayout optimize`: profile, plan and measure in one command."""

from __future__ import annotations

import json
import sys

from conftest import run_program
from heaplayout.workloads import load_suite


def test_optimize_end_to_end(build_dir, runtime_lib, tmp_path):
    w = {w.name: w for w in load_suite()}["halo_tokens"]
    out = tmp_path / "out"
    r = run_program([sys.executable, "-m", "heaplayout.cli", "optimize", "--runs", "1", "-o", str(out),
                     "--", str(w.binary()), *w.args("small")], timeout=300)
    text = r.stdout.decode()
    assert r.returncode == 0, text + r.stderr.decode()
    assert (out / "halo_tokens.prof").exists() and (out / "halo_tokens.halo.plan").exists()
    assert "rest callsite" in (out / "halo_tokens.halo-rest.plan").read_text()
    assert "rest callsite" not in (out / "halo_tokens.halo.plan").read_text()
    doc = json.loads((out / "bench.json").read_text())
    assert [c["policy"] for c in doc["configs"]] == [None, "callsite", "plan", "plan"]
    assert [c["label"] for c in doc["configs"]][2:] == ["planned", "planned_rest"]
    assert all(c["output_ok"] for c in doc["configs"])
    assert "== 4. verdict" in text and "heaplayout run --plan" in text


def test_optimize_without_a_program_is_a_usage_error():
    r = run_program([sys.executable, "-m", "heaplayout.cli", "optimize"])
    assert r.returncode == 2 and b"no program given" in r.stderr
