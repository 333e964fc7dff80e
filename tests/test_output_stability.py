"""heaplayout/output_stability.py: masks for what differs between two outputs of identical runs."""

from __future__ import annotations

import doctest

from heaplayout import output_stability
from heaplayout.bench_check import normalizer
from heaplayout.output_stability import unstable_patterns

A = b"c restarts : 12\nconflicts : 5519 (1944 /sec)\nCPU time : 3.14 s\nSATISFIABLE\n"
B = b"c restarts : 12\nconflicts : 5519 (1666 /sec)\nCPU time : 2.9 s\nSATISFIABLE\n"


def test_doctest() -> None:
    assert doctest.testmod(output_stability).failed == 0


def test_masks_only_the_differing_tokens() -> None:
    pats = unstable_patterns(A, B)
    assert pats == [r"(?m)^conflicts\s+:\s+5519\s+\S+", r"(?m)^CPU\s+time\s+:\s+\S+"]
    norm = normalizer(pats)
    assert norm(A) == norm(B)
    # a change anywhere else is still seen: the count on the masked line, the verdict line
    assert norm(A.replace(b"5519", b"5520")) != norm(A)
    assert norm(A.replace(b"SATISFIABLE", b"UNSATISFIABLE")) != norm(A)
    assert norm(A.replace(b"/sec)", b"/min)")) != norm(A)  # tokens after the last differing one stay checked


def test_equal_outputs_need_no_mask() -> None:
    assert unstable_patterns(A, A) == []


def test_no_mask_when_lines_or_tokens_differ_in_number() -> None:
    assert unstable_patterns(b"a\nb\n", b"a\n") is None
    assert unstable_patterns(b"x 1 2\n", b"x 1\n") is None
    assert unstable_patterns(b"x  1\n", b"x 1\n") is None  # whitespace alone: not a token
    many = b"".join(b"v%d %d\n" % (i, i) for i in range(100))
    other = b"".join(b"v%d %d\n" % (i, i + 1) for i in range(100))
    assert unstable_patterns(many, other) is None  # more unstable lines than a timing line or two


def test_regex_characters_in_tokens_are_literal() -> None:
    pats = unstable_patterns(b"[x] (a|b) 1.5\n", b"[x] (a|b) 2.5\n")
    assert pats == [r"(?m)^\[x\]\s+\(a\|b\)\s+\S+(?=[^\S\n]*$)"]
    assert normalizer(pats)(b"[y] (a|b) 7\n") == b"[y] (a|b) 7\n"


def test_a_pointer_printed_alone_does_not_mask_a_checksum_printed_alone() -> None:
    """optimize on a program printing `%p` lines and its result: the mask was `(?m)^\\S+`,
    which also hid the result line, so a wrong result passed every output check."""
    a = b"0x55d0c1a3b2a0\nnode 0x55d0c1a3b2c0\n999999500000\n"
    b = b"0x7f0c1a3b2a00\nnode 0x6000000010\n999999500000\n"
    pats = unstable_patterns(a, b)
    assert pats is not None
    norm = normalizer(pats)
    assert norm(a) == norm(b)
    assert norm(a.replace(b"999999500000", b"999999500001")) != norm(a)
    assert norm(a.replace(b"node 0x", b"edge 0x")) != norm(a)


def test_a_masked_last_token_must_end_its_line() -> None:
    pats = unstable_patterns(b"t 1.5\nok\n", b"t 2.5\nok\n")
    norm = normalizer(pats)
    assert norm(b"t 3.5\nok\n") == norm(b"t 1.5\nok\n")
    assert norm(b"t 1.5 extra\nok\n") != norm(b"t 1.5\nok\n")  # another shape of line is checked


def test_a_mask_never_hides_a_line_both_runs_printed_alike() -> None:
    """A random hex id alone on a line, then the result alone on a line: `(?m)^\\S+` (even
    anchored at the line's end) masked the result too, and optimize recommended a
    configuration that printed -1. The mask is narrowed to the id's characters and length;
    where even that would match the result, there is no mask and the user is asked."""
    a, b = b"9f3a2b1c\n44999850000\n", b"4e11d70a9\n44999850000\n"
    pats = unstable_patterns(a, b)
    assert pats == [r"(?m)^[0-9a-f]{8,9}(?=[^\S\n]*$)"]
    norm = normalizer(pats)
    assert norm(a) == norm(b) and norm(a.replace(b"44999850000", b"-1")) != norm(a)
    # an id as long as the result, of the same digits: no mask can tell them apart
    assert unstable_patterns(b"12345678901\n44999850000\n", b"65432109876\n44999850000\n") is None
