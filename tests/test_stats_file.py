"""The statistics JSON file is written safely (issue 19, finding 5)."""

from __future__ import annotations

import json
import os

from conftest import run_program


def test_planted_symlink_at_temporary_name_is_not_followed(runtime_lib, build_dir, tmp_path):
    """A symlink planted where the runtime writes its temporary file (a guessable
    `<path>.tmp<pid>...` name in a shared directory) must not truncate its target, and the
    statistics still arrive at the path asked for. The shell's pid is the program's pid
    after `exec`, so the planted names are the ones the runtime will use."""
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "s.json"
    exe = build_dir / "tests" / "runtime" / "engine_test"
    plant = " ".join(f'ln -s "{victim}" "{out}.tmp$${suffix}";' for suffix in ("", ".0", ".1"))
    script = f'{plant} exec "{exe}" reuse'
    r = run_program(["sh", "-c", script], env_extra={
        "LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "callsite",
        "HEAPLAYOUT_MIN_OBJECTS": "0", "HEAPLAYOUT_STATS_JSON": str(out)})
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n"
    assert json.loads(out.read_text())["policy"] == "callsite"


def test_symlink_at_the_final_path_is_replaced_not_followed(runtime_lib, build_dir, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    out = tmp_path / "s.json"
    os.symlink(victim, out)
    r = run_program([str(build_dir / "tests" / "runtime" / "engine_test"), "reuse"], env_extra={
        "LD_PRELOAD": str(runtime_lib), "HEAPLAYOUT_POLICY": "callsite",
        "HEAPLAYOUT_MIN_OBJECTS": "0", "HEAPLAYOUT_STATS_JSON": str(out)})
    assert r.returncode == 0, r.stderr
    assert victim.read_text() == "precious\n"
    assert not out.is_symlink() and json.loads(out.read_text())["policy"] == "callsite"
