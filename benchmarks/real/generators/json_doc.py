"""A JSON event log and a jq program that reports over it.

jq parses the whole document into reference-counted values (one malloc'd object per
number, string, array and object), then the filter groups, sorts, rebuilds objects and
formats strings, copying values on write.
"""

from __future__ import annotations

import json
import random

from . import words

FILTER = r"""
def bucket: (.ts / 3600 | floor);
{
  users: (group_by(.user) | map({user: .[0].user, n: length, bytes: (map(.size) | add),
          kinds: (map(.kind) | unique)}) | sort_by(-.n, .user) | .[0:10]),
  hours: (group_by(bucket) | map({h: (.[0] | bucket), n: length}) | sort_by(-.n, .h) | .[0:5]),
  tags: ([.[].tags[]] | group_by(.) | map([.[0], length]) | sort_by(-.[1], .[0]) | .[0:8]),
  paths: (map(.path | split("/") | .[1:3] | join("/")) | unique | length),
  errors: (map(select(.status >= 500) | "\(.user):\(.path)") | .[0:5]),
  deep: (map(.meta | to_entries | map(.value * 2) | add) | add)
}
"""


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    users = words(rng, params["users"])
    segs = words(rng, params["paths"])
    events = []
    for i in range(params["events"]):
        events.append({
            "id": i, "ts": rng.randint(0, 86400 * 3), "user": rng.choice(users),
            "kind": rng.choice(["get", "put", "del", "list", "head"]),
            "path": "/" + "/".join(rng.choice(segs) for _ in range(rng.randint(1, 5))),
            "status": rng.choice([200] * 8 + [404, 500, 503]), "size": rng.randint(0, 10**6),
            "tags": rng.sample(segs, rng.randint(0, 4)),
            "meta": {f"m{k}": rng.randint(0, 99) for k in range(rng.randint(1, params["meta"]))},
        })
    return {"events.json": json.dumps(events, indent=1).encode(), "report.jq": FILTER.encode()}
