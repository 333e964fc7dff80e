"""A short fuzz run of the runtime's plan reader and environment settings (fuzz/README.md):
libFuzzer with ASan and UBSan, seeded with the suite's plans and the conformance cases,
for 16 seconds in all. Any crash, leak, undefined behaviour or broken promise of the
harnesses fails the test. The long run is benchmarks/fuzz_plan.py."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heaplayout import paths

FUZZ = paths.REPO_ROOT / "fuzz"


@pytest.fixture(scope="module")
def fuzzers(build_dir: Path) -> Path:
    if shutil.which("clang-16") is None:
        pytest.fail("clang-16 is not installed: scripts/setup.sh installs it (clang-16, libclang-rt-16-dev)")
    out = build_dir / "fuzz"
    r = subprocess.run([str(FUZZ / "build.sh"), str(out)], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("corpus")
    r = subprocess.run([sys.executable, str(FUZZ / "make_corpus.py"), str(out)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def fuzz(binary: Path, seeds: Path, dictionary: Path, seconds: int, work: Path) -> int:
    """Run one fuzzer; the number of inputs it ran. Fails on any crash."""
    work.mkdir()
    r = subprocess.run([str(binary), f"-max_total_time={seconds}", f"-dict={dictionary}", "-timeout=10",
                        f"-artifact_prefix={work}/", str(work), str(seeds)],
                       capture_output=True, text=True, timeout=seconds + 120)
    crashes = [p.name for p in work.iterdir() if p.name.startswith(("crash-", "leak-", "timeout-", "oom-"))]
    assert r.returncode == 0 and not crashes, r.stderr[-3000:]
    done = re.search(r"Done (\d+) runs", r.stderr)
    assert done, r.stderr[-2000:]
    return int(done.group(1))


def test_fuzz_the_plan_reader(fuzzers, corpus, tmp_path):
    runs = fuzz(fuzzers / "plan_parse_fuzz", corpus / "plan", FUZZ / "plan.dict", 10, tmp_path / "work")
    assert runs > 5000  # it ran past the seeds (about 8000 inputs a second on one core)


def test_fuzz_the_environment_settings(fuzzers, corpus, tmp_path):
    runs = fuzz(fuzzers / "options_fuzz", corpus / "options", FUZZ / "options.dict", 6, tmp_path / "work")
    assert runs > 5000


def test_the_harness_catches_a_broken_parser(fuzzers, tmp_path):
    """The harness must be able to fail: the pre-fix bug of finding 1 (an offset's high bits
    taken as a module index) put back into a copy of the parser is found at once."""
    src = (paths.REPO_ROOT / "runtime" / "src" / "plan_parse.c").read_text()
    broken = src.replace("if (k == NUM_TOO_BIG || offset > HL_PLAN_MAX_OFFSET)", "if (0)")
    assert broken != src
    (tmp_path / "plan_parse.c").write_text(broken)
    binary = tmp_path / "broken_fuzz"
    subprocess.run(["clang-16", "-g", "-O1", "-fsanitize=fuzzer,address,undefined", f"-I{paths.REPO_ROOT}/runtime/src",
                    "-o", str(binary), str(FUZZ / "plan_parse_fuzz.c"), str(tmp_path / "plan_parse.c")], check=True,
                   timeout=300)
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    case = paths.REPO_ROOT / "tests" / "data" / "plan_conformance" / "finding1_offset_2_48.plan"
    (seeds / "seed").write_bytes(case.read_bytes())
    r = subprocess.run([str(binary), "-runs=1000", f"-artifact_prefix={tmp_path}/", str(seeds)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode != 0 and "deadly signal" in r.stderr
