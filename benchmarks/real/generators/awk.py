"""A log file and a gawk program: per-key statistics in associative arrays.

Each field split makes strings; arrays keyed by user, path prefix and word grow and are
sorted (asorti) at the end; sprintf/gsub rewrite fields. The output is the sorted summary.
"""

from __future__ import annotations

import random

from . import words

PROGRAM = r"""
{
    n[$2]++; bytes[$2] += $5
    split($3, parts, "/")
    prefix[parts[2] "/" parts[3]]++
    for (i = 6; i <= NF; i++) { w = tolower($i); gsub(/[^a-z]/, "", w); if (w != "") freq[w]++ }
    key = sprintf("%s-%03d", $4, $5 % 1000); seen[key] = $1
    line = $0; gsub(/[aeiou]/, "#", line); total += length(line)
}
END {
    m = asorti(n, users); for (i = 1; i <= m && i <= 10; i++) printf "%s %d %d\n", users[i], n[users[i]], bytes[users[i]]
    m = asorti(freq, ws); top = ""; for (i = 1; i <= m; i += int(m / 10) + 1) top = top " " ws[i] ":" freq[ws[i]]
    print "words" top
    print "prefixes", length(prefix), "keys", length(seen), "total", total
}
"""


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    users = words(rng, params["users"])
    segs = words(rng, params["segments"])
    vocab = words(rng, params["vocab"])
    lines = []
    for i in range(params["lines"]):
        path = "/" + "/".join(rng.choice(segs) for _ in range(rng.randint(2, 5)))
        text = " ".join(rng.choice(vocab).capitalize() if rng.random() < 0.2 else rng.choice(vocab)
                        for _ in range(rng.randint(2, 12)))
        lines.append(f"{i} {rng.choice(users)} {path} {rng.choice(['GET', 'PUT', 'POST'])} {rng.randint(0, 99999)} {text}")
    return {"access.log": ("\n".join(lines) + "\n").encode(), "report.awk": PROGRAM.encode()}
