"""Which parts of a program's stdout differ between two identical runs, as `--ignore` patterns.

Programs print rates, times and counters of their own (a SAT solver's "(194441 /sec)", a
"CPU time" line): two runs of the same binary on the same input under the same allocator
differ there, so every output check against a reference run would fail, and `optimize`
would find that out only after profiling. `unstable_patterns` compares two such outputs
line by line and, where the lines differ only in some whitespace-separated tokens, writes
one regular expression per line that masks those tokens and nothing after them, anchored at
the line's start with its other tokens spelled out: the rest of the line (and every other
line) is still checked byte for byte. A differing token that is the line's last must also
end the line, and one that is an address (0x and hex digits, as `%p` prints) in both runs
is masked as an address only: a line that prints a pointer alone must not mask every other
one-token line (a checksum) too. No mask may match a line that was the same in both runs
(a result printed alone): a mask that would is narrowed to the differing tokens' characters
and lengths (a random hex id alone on a line: `[0-9a-f]{8,9}`), and when even that matches
such a line there is no mask. When the outputs differ otherwise (another number of lines,
or of tokens in a line), there is no such mask and the caller must ask the user.

    >>> unstable_patterns(b"conflicts : 5519 (1944 /sec)\\nok\\n", b"conflicts : 5519 (1666 /sec)\\nok\\n")
    ['(?m)^conflicts\\\\s+:\\\\s+5519\\\\s+\\\\S+']
"""

from __future__ import annotations

import re

# More unstable lines than this is not a timing line or two: better the user says what to ignore.
MAX_UNSTABLE_LINES = 64

_SPACE = re.compile(rb"(\s+)")
_ADDRESS = re.compile(rb"0[xX][0-9a-fA-F]+")


def _tokens(line: bytes) -> list[bytes]:
    """The line's tokens and the whitespace between them, alternating; starts with a token
    (possibly empty, when the line starts with whitespace)."""
    return _SPACE.split(line)


_CLASSES = ((rb"[0-9]+", r"[0-9]"), (rb"[0-9a-f]+", r"[0-9a-f]"), (rb"[0-9A-F]+", r"[0-9A-F]"),
            (rb"[0-9.]+", r"[0-9.]"), (rb"[0-9A-Za-z]+", r"[0-9A-Za-z]"))


def _narrow(x: bytes, y: bytes) -> str:
    """The narrowest of a few character classes, with the two tokens' lengths, that both
    tokens fit: "9f3a2b1c" and "4e11d70a9" give [0-9a-f]{8,9}."""
    lo, hi = sorted((len(x), len(y)))
    for whole, cls in _CLASSES:
        if re.fullmatch(whole, x) and re.fullmatch(whole, y):
            return f"{cls}{{{lo},{hi}}}" if lo != hi else f"{cls}{{{lo}}}"
    return rf"[^\s]{{{lo},{hi}}}" if lo != hi else rf"[^\s]{{{lo}}}"


def _line_pattern(a: bytes, b: bytes, narrow: bool = False) -> str | None:
    ta, tb = _tokens(a), _tokens(b)
    if len(ta) != len(tb):
        return None
    differing = [i for i in range(0, len(ta), 2) if ta[i] != tb[i]]
    if not differing or any(not ta[i] or not tb[i] for i in differing):
        return None  # only whitespace differs, or a token appears in one line only
    parts = []
    for i in range(differing[-1] + 1):
        if i % 2:  # the whitespace between two tokens
            parts.append(r"\s+")
        elif ta[i] != tb[i]:
            both_addresses = _ADDRESS.fullmatch(ta[i]) and _ADDRESS.fullmatch(tb[i])
            parts.append(r"0[xX][0-9a-fA-F]+" if both_addresses else _narrow(ta[i], tb[i]) if narrow else r"\S+")
        else:
            try:
                parts.append(re.escape(ta[i].decode("utf-8")))
            except UnicodeDecodeError:  # the pattern is text (bench_check encodes it as UTF-8)
                return None
    if all(not t.strip() for t in ta[differing[-1] + 1:] + tb[differing[-1] + 1:]):
        parts.append(r"(?=[^\S\n]*$)")  # the last token: the line ends here
    return "(?m)^" + "".join(parts)


def unstable_patterns(a: bytes, b: bytes) -> list[str] | None:
    """Patterns (for bench_check.normalizer) under which `a` and `b` are equal, masking only
    tokens that differ; [] when they are equal already; None when no such patterns exist."""
    if a == b:
        return []
    la, lb = a.split(b"\n"), b.split(b"\n")
    if len(la) != len(lb):
        return None
    stable = [x for x, y in zip(la, lb) if x == y]
    patterns: list[str] = []
    for x, y in zip(la, lb):
        if x == y:
            continue
        p = _line_pattern(x, y)
        if p is not None and _hides_a_stable_line(p, stable):
            p = _line_pattern(x, y, narrow=True)
            if p is not None and _hides_a_stable_line(p, stable):
                return None
        if p is None:
            return None
        if p not in patterns:
            patterns.append(p)
        if len(patterns) > MAX_UNSTABLE_LINES:
            return None
    return patterns


def _hides_a_stable_line(pattern: str, stable: list[bytes]) -> bool:
    """The mask matches in a line both runs printed alike: it would hide a result there."""
    rx = re.compile(pattern.encode())
    return any(rx.search(line) for line in stable)
