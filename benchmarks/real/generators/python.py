"""A Python program: what a data-processing script allocates.

A generated CSV-like table is parsed into objects, indexed in dicts, grouped, serialized to
JSON and parsed back, tokenized with regular expressions, and walked as a linked graph.
CPython keeps objects up to 512 bytes in its own arenas (pymalloc, left on: it is what users
run), so the allocator sees the larger objects: dict/list storage, long strings, JSON text.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    names = words(rng, params["names"])
    rows = []
    for i in range(params["rows"]):
        rows.append(f"{i},{rng.choice(names)},{rng.choice(names)},{rng.randint(0, 10**6)},"
                    f"{' '.join(rng.sample(names, rng.randint(1, 6)))}")
    data = "\n".join(rows) + "\n"
    src = f'''
import collections, hashlib, json, re, sys

class Rec:
    def __init__(self, fields):
        self.id = int(fields[0]); self.a = fields[1]; self.b = fields[2]
        self.v = int(fields[3]); self.words = fields[4].split(" ")
        self.links = []

def main(path, rounds):
    h = hashlib.sha256()
    text = open(path).read()
    for r in range(rounds):
        recs = [Rec(line.split(",")) for line in text.splitlines()]
        by_a = collections.defaultdict(list)
        for rec in recs:
            by_a[rec.a].append(rec)
        for group in by_a.values():
            for x, y in zip(group, group[1:]):
                x.links.append(y)
        seen, total = set(), 0
        for rec in recs[:: max(1, len(recs) // 200)]:
            stack = [rec]
            while stack:
                n = stack.pop()
                if n.id in seen:
                    continue
                seen.add(n.id)
                total += n.v
                stack.extend(n.links)
        doc = [{{"id": x.id, "a": x.a, "w": x.words, "s": {{"v": x.v, "k": len(x.links)}}}} for x in recs if x.v % 3 == r % 3]
        back = json.loads(json.dumps(doc, sort_keys=True))
        counts = collections.Counter(w for x in back for w in x["w"])
        tokens = re.findall(r"[a-z]{{4,}}", text[: len(text) // (r + 1)])
        big = sorted(by_a.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:5]
        h.update(repr((total, len(seen), counts.most_common(5), len(tokens), [(k, len(v)) for k, v in big])).encode())
        print(r, total, len(seen), len(back), len(tokens))
    print("digest", h.hexdigest())

main(sys.argv[1], {params["rounds"]})
'''
    return {"main.py": src.encode(), "data.csv": data.encode()}
