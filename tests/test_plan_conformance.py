"""The plan file has one grammar and two readers: the runtime's (runtime/src/plan_parse.c)
and heaplayout/plan_format.py. Every case in tests/data/plan_conformance/ (cases.toml says
what each must give) is read by both: the same verdict, the same line, the same reason.
Mutations of the cases' valid plans are then read by both too, and must agree the same way."""

from __future__ import annotations

import random
import subprocess
import tomllib
from pathlib import Path

import pytest

from heaplayout.plan_format import PlanError, read_plan

CASES_DIR = Path(__file__).resolve().parent / "data" / "plan_conformance"
CASES = tomllib.loads((CASES_DIR / "cases.toml").read_text())["cases"]


def c_verdicts(build_dir: Path, files: list[Path]) -> dict[str, tuple]:
    """The runtime parser's verdict on each file: ("ok",) or ("error", line, reason)."""
    checker = build_dir / "tests" / "runtime" / "plan_parse_check"
    out = subprocess.run([str(checker), *map(str, files)], capture_output=True, check=True).stdout
    verdicts = {}
    for row in out.decode("utf-8").splitlines():
        path, verdict, *rest = row.split("\t")
        verdicts[path] = ("ok",) if verdict == "ok" else ("error", int(rest[0]), rest[1])
    assert len(verdicts) == len(files)
    return verdicts


def python_verdict(path: Path) -> tuple:
    try:
        read_plan(path)
    except PlanError as err:
        return ("error", err.line, err.reason)
    return ("ok",)


@pytest.fixture(scope="module")
def c_case_verdicts(build_dir: Path) -> dict[str, tuple]:
    return c_verdicts(build_dir, [CASES_DIR / f"{name}.plan" for name in CASES])


@pytest.mark.parametrize("name", sorted(CASES))
def test_both_readers_give_the_expected_verdict(name: str, c_case_verdicts: dict[str, tuple]) -> None:
    case = CASES[name]
    path = CASES_DIR / f"{name}.plan"
    py = python_verdict(path)
    c = c_case_verdicts[str(path)]
    assert c == py, f"the readers disagree on {name}: C {c}, Python {py}"
    if case["verdict"] == "valid":
        assert py == ("ok",), f"{name} ({case['covers']}) should be valid: {py}"
    else:
        assert py[0] == "error", f"{name} ({case['covers']}) should be refused"
        assert py[1] == case["line"] and case["reason"] in py[2], (name, py)


def mutate(rng: random.Random, data: bytes) -> bytes:
    """A few byte-level and line-level edits, biased towards the grammar's edges."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        if op == 0 and b:
            del b[rng.randrange(len(b))]
        elif op == 1:
            b.insert(rng.randrange(len(b) + 1), rng.randrange(256))
        elif op == 2 and b:
            b[rng.randrange(len(b))] = rng.choice(b" :x0\n\r-#f19\x00\xff")
        elif op in (3, 4):
            lines = bytes(b).split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            if op == 3:
                lines.insert(i, lines[j])
            else:
                del lines[i]
            b = bytearray(b"\n".join(lines))
        elif b:
            i = rng.randrange(len(b))
            b[i:i] = rng.choice([b"0xffff00000000150f", b"18446744073709551616", b" select 1 0:0x10\n", b"\xc3\xa9",
                                 b"\xed\xa0\x80", b"99999999999999999999999", b"packed", b"0x", b"\r"])
    return bytes(b)


def test_mutated_plans_get_the_same_verdict_from_both(build_dir: Path, tmp_path: Path) -> None:
    seeds = [(CASES_DIR / f"{name}.plan").read_bytes() for name, case in sorted(CASES.items())
             if case["verdict"] == "valid" and name != "groups_4093"]
    rng = random.Random(19)
    files = []
    for i in range(3000):
        path = tmp_path / f"m{i}.plan"
        path.write_bytes(mutate(rng, rng.choice(seeds)))
        files.append(path)
    c = c_verdicts(build_dir, files)
    disagree = [(p.name, c[str(p)], python_verdict(p)) for p in files if c[str(p)] != python_verdict(p)]
    assert not disagree, disagree[:5]
    accepted = sum(v == ("ok",) for v in c.values())
    assert 50 < accepted < len(files) - 500  # the mutations reach both verdicts


def test_the_runtime_refuses_each_invalid_case_with_the_readers_message(build_dir: Path) -> None:
    """The whole runtime, not only its parser: a program given each invalid case runs as
    without a plan and prints exactly the message PlanError.runtime_message predicts."""
    from conftest import run_program

    program = build_dir / "tests" / "runtime" / "plan_test_nofp"
    plain = run_program([str(program), "50"])
    for name, case in sorted(CASES.items()):
        if case["verdict"] != "invalid":
            continue
        path = CASES_DIR / f"{name}.plan"
        with pytest.raises(PlanError) as err:
            read_plan(path)
        r = run_program([str(program), "50"], env_extra={"HEAPLAYOUT_PLAN": str(path)}, timeout=20)
        assert r.returncode == 0 and r.stdout == plain.stdout, name
        assert r.stderr.decode() == err.value.runtime_message(path) + "\n", name
