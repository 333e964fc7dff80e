"""benchmarks/olden/run.py: the manifest, the build from a source tree the user has, and the
table from optimize's evidence. The Olden sources are not in the repository: a small list
program written here stands in for them."""

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks.olden import run

TOY = r"""
#include <stdio.h>
#include <stdlib.h>
struct cell { struct cell *next; long v; };
int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) : 10, s = 0;
  struct cell *h = NULL;
  for (long i = 0; i < n; i++) { struct cell *c = malloc(sizeof *c); c->v = i; c->next = h; h = c; }
  for (struct cell *c = h; c; c = c->next) s += c->v;
  printf("%ld\n", s);
  return 0;
}
"""


def toy_tree(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "src" / "toylist"
    src.mkdir(parents=True)
    (src / "main.c").write_text(TOY)
    manifest = tmp_path / "programs.toml"
    manifest.write_text('[[program]]\nname = "toy"\ndir = "toylist"\nsources = ["main.c"]\n'
                        'train = ["100"]\nmeasure = ["1000"]\n')
    return tmp_path / "src", manifest


def test_the_manifest_names_every_program_with_its_inputs():
    programs = run.load_manifest()
    names = [p.name for p in programs]
    assert len(names) == len(set(names)) >= 8
    for p in programs:
        assert p.sources and p.train and p.measure, p
        assert p.train != p.measure, p  # profiled on one input, measured on another


def test_a_manifest_entry_without_inputs_is_refused(tmp_path):
    bad = tmp_path / "p.toml"
    bad.write_text('[[program]]\nname = "x"\ndir = "x"\nsources = ["x.c"]\ntrain = ["1"]\n')
    with pytest.raises(ValueError, match="missing measure"):
        run.load_manifest(bad)


def test_build_compiles_each_program_from_the_source_tree(tmp_path):
    src, manifest = toy_tree(tmp_path)
    out = tmp_path / "out"
    assert run.main(["--source", str(src), "--out", str(out), "--manifest", str(manifest), "--stage", "build"]) == 0
    exe = out / "bin" / "toy"
    r = subprocess.run([str(exe), "1000"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout == "499500\n"
    assert "-O2" in run.build_command(run.load_manifest(manifest)[0], src, exe)


def test_a_missing_source_file_is_named_and_fails_the_run(tmp_path, capsys):
    src, manifest = toy_tree(tmp_path)
    (src / "toylist" / "main.c").unlink()
    rc = run.main(["--source", str(src), "--out", str(tmp_path / "out"), "--manifest", str(manifest)])
    assert rc == 1
    assert "lacks main.c" in capsys.readouterr().err


def test_the_table_reports_optimize_s_recommendation(tmp_path):
    src, manifest = toy_tree(tmp_path)
    out = tmp_path / "out"
    run.main(["--source", str(src), "--out", str(out), "--manifest", str(manifest), "--stage", "build"])
    spread = {"median": 0.9, "q1": 0.88, "q3": 0.93, "n": 9}
    doc = {
        "elapsed_s": 12.0, "runs": 40,
        "decision": {"best_allocator": "mimalloc", "finalist": "halo+mimalloc", "confirmation_ratios": [0.9] * 9},
        "candidates": [
            {"label": "mimalloc", "allocator": "mimalloc", "strategy": "alone", "race": {}},
            {"label": "halo+mimalloc", "allocator": "mimalloc", "strategy": "halo",
             "confirmation": {"ratio_to_best_allocator": spread}},
        ],
        "recommendation": {"label": "halo+mimalloc", "kind": "strategy", "resolved": True,
                           "ratio_to_best_allocator": spread},
    }
    (out / "opt" / "toy").mkdir(parents=True)
    (out / "opt" / "toy" / "optimize.json").write_text(json.dumps(doc))
    # the evidence is there: optimize is not run again, and the table says what it found
    assert run.main(["--out", str(out), "--manifest", str(manifest)]) == 0
    table = (out / "olden.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| toy "))
    assert "halo+mimalloc | 0.900 [0.88–0.93]" in row
    assert "geometric mean 0.900 over 1 programs" in table
