"""Programs no one here wrote, under the runtime: same stdout, stderr and exit status as a
plain run (policies off and callsite on glibc; callsite on mimalloc for Python), and the
callsite runs really pooled objects where the program allocates enough.

Python (an allocation-heavy script, with pymalloc and with PYTHONMALLOC=malloc), gcc (its
cc1 alone, then the full driver spawning cc1/as/ld which inherit LD_PRELOAD, and the compiled
binary's output), cmake -P (C++, operator new everywhere), sqlite3 (a generated database, joins/group by/order by), multi-threaded xz
and sort, a non-zero exit code, and death by a signal. The whole file takes well under two
minutes.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_program
from heaplayout import allocators
from heaplayout.runtime_env import RuntimeConfig, runtime_env

PY = sys.executable  # the real interpreter binary (pyenv's python3 on PATH is a shell shim)

# name -> (policy, allocator underneath); None = a plain run without our runtime
RUNTIME_CONFIGS = {
    "off": ("off", "glibc"),
    "callsite": ("callsite", "glibc"),
}


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    return path


def under_runtime(argv: list[str], policy: str, allocator: str, stats_json: Path | None,
                  env_extra: dict[str, str] | None = None, **kw) -> subprocess.CompletedProcess:
    env = runtime_env(RuntimeConfig(policy=policy, allocator=allocator,
                                    stats_json=str(stats_json) if stats_json else None))
    env.update(env_extra or {})
    return run_program(argv, env_extra=env, **kw)


def pooled(stats_json: Path) -> int:
    assert stats_json.exists(), "HEAPLAYOUT_STATS_JSON was set but no stats file was written"
    data = json.loads(stats_json.read_text())
    return sum(int(p["objects"]) for p in data["pools"])


def same_as_plain(plain: subprocess.CompletedProcess, res: subprocess.CompletedProcess, what: str) -> None:
    detail = f"{what}\n--- stderr under the runtime ---\n{res.stderr.decode(errors='replace')[-3000:]}"
    assert res.returncode == plain.returncode, f"exit status {res.returncode}, plain run {plain.returncode}: {detail}"
    assert res.stdout == plain.stdout, f"stdout differs from the plain run: {detail}"
    assert res.stderr == plain.stderr, f"stderr differs from the plain run: {detail}"


def configs(extra_mimalloc: bool = False):
    out = [pytest.param(p, a, id=name) for name, (p, a) in RUNTIME_CONFIGS.items()]
    if extra_mimalloc:
        out.append(pytest.param("callsite", "mimalloc", id="callsite-mimalloc"))
    return out


def skip_missing(allocator: str) -> None:
    if allocator not in allocators.available_allocators():
        pytest.skip(f"{allocator} is not installed")


# ------------------------------------------------------------------ python

PY_SCRIPT = r'''
import json, random, re, collections, hashlib
random.seed(1234)
h = hashlib.sha256()
# dicts of lists of strings, grown and shrunk
d = {}
for i in range(60000):
    k = "key%05d" % random.randrange(20000)
    d.setdefault(k, []).append("v" * random.randrange(1, 40) + str(i))
    if i % 7 == 0 and d:
        d.pop("key%05d" % random.randrange(20000), None)
h.update(repr(sorted((k, len(v)) for k, v in d.items())).encode())
# json round trip of a nested structure
doc = [{"id": i, "name": "n%d" % i, "tags": ["t%d" % (i % 13)] * (i % 5),
        "nested": {"x": i * 0.5, "y": [i, str(i), None, True]}} for i in range(20000)]
text = json.dumps(doc, sort_keys=True)
back = json.loads(text)
assert back == doc
h.update(text.encode())
# strings: split, join, replace, regex
words = re.findall(r"[a-z]+\d*", text)
cnt = collections.Counter(w[:3] for w in words)
h.update(repr(cnt.most_common(20)).encode())
s = " ".join(words[:50000]).replace("name", "NAME").upper()
h.update(s.encode())
# lists of tuples, sorting, sets
pairs = [(random.random(), i) for i in range(100000)]
pairs.sort()
h.update(repr(pairs[:100]).encode())
st = set(random.randrange(10**6) for _ in range(100000))
h.update(str(len(st)).encode())
# objects with attributes (many small allocations, freed in bulk)
class Node:
    __slots__ = ("a", "b", "next")
    def __init__(self, a, b, nxt): self.a, self.b, self.next = a, b, nxt
head = None
for i in range(100000):
    head = Node(i, str(i), head)
n, total = head, 0
while n is not None:
    total += n.a
    n = n.next
del head
print("dict keys", len(d))
print("json bytes", len(text))
print("words", len(words), "distinct prefixes", len(cnt))
print("set", len(st), "list total", total)
print("digest", h.hexdigest())
'''


@pytest.fixture(scope="module")
def py_script(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("py") / "alloc_heavy.py"
    p.write_text(PY_SCRIPT)
    return p


@pytest.mark.parametrize("pymalloc", ["pymalloc", "malloc"])
@pytest.mark.parametrize("policy, allocator", configs(extra_mimalloc=True))
def test_python(runtime_lib, py_script, tmp_path, policy, allocator, pymalloc):
    skip_missing(allocator)
    env = {"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    if pymalloc == "malloc":
        env["PYTHONMALLOC"] = "malloc"  # every object through malloc: lots to pool
    argv = [PY, str(py_script)]
    plain = run_program(argv, env_extra=env)
    assert plain.returncode == 0, plain.stderr
    stats = tmp_path / "stats.json"
    res = under_runtime(argv, policy, allocator, stats, env_extra=env)
    same_as_plain(plain, res, f"python ({pymalloc}) under {policy}/{allocator}")
    if policy == "callsite" and pymalloc == "malloc":
        assert pooled(stats) > 10000, "Python with PYTHONMALLOC=malloc makes ~10^6 small objects: none pooled?"
    if policy == "off":
        assert pooled(stats) == 0


# ------------------------------------------------------------------ gcc

def c_program() -> str:
    """A small C program (generated here) that allocates a little and prints deterministic output."""
    rnd = random.Random(42)
    funcs = []
    for i in range(40):
        a, b, c = rnd.randrange(1, 100), rnd.randrange(1, 100), rnd.randrange(1, 7)
        funcs.append(f"static long f{i}(long x) {{ long s = {a}; for (int k = 0; k < {c}; k++) s = s * {b} + x % {a + 1}; return s; }}")
    calls = "\n".join(f'  acc = acc * 31 + f{i}(acc & 1023); printf("f{i} %ld\\n", acc % 100000);' for i in range(40))
    return f"""#include <stdio.h>
#include <stdlib.h>
#include <string.h>
struct node {{ struct node *next; int v; char name[20]; }};
{chr(10).join(funcs)}
static int cmp(const void *a, const void *b) {{ return (*(const int *)a > *(const int *)b) - (*(const int *)a < *(const int *)b); }}
int main(void) {{
  long acc = 7;
{calls}
  struct node *head = NULL;
  for (int i = 0; i < 5000; i++) {{
    struct node *n = malloc(sizeof *n);
    n->next = head; n->v = (i * 7919) % 10007; snprintf(n->name, sizeof n->name, "n%d", i); head = n;
  }}
  int *arr = malloc(5000 * sizeof *arr); int k = 0;
  for (struct node *n = head; n; n = n->next) arr[k++] = n->v;
  qsort(arr, 5000, sizeof *arr, cmp);
  printf("median %d min %d max %d\\n", arr[2500], arr[0], arr[4999]);
  while (head) {{ struct node *n = head->next; free(head); head = n; }}
  free(arr);
  return (int)(acc & 7) == 8 ? 1 : 0;
}}
"""


@pytest.fixture(scope="module")
def c_source(tmp_path_factory) -> Path:
    need("gcc")
    p = tmp_path_factory.mktemp("c") / "prog.c"
    p.write_text(c_program())
    return p


def cc1_command(source: Path, out: Path) -> list[str]:
    """cc1's own command line, as the gcc driver would run it for `gcc -O2 -S`."""
    res = subprocess.run(["gcc", "-###", "-O2", "-S", str(source), "-o", str(out)], capture_output=True, text=True)
    for line in res.stderr.splitlines():
        words = shlex.split(line)
        if words and words[0].endswith("/cc1"):
            return words
    pytest.skip("could not find cc1's command line in gcc -###")


@pytest.mark.parametrize("policy, allocator", configs())
def test_cc1_alone(runtime_lib, c_source, tmp_path, policy, allocator):
    """cc1 as a single process, so that its stats JSON is its own."""
    plain_out, out = tmp_path / "plain.s", tmp_path / "rt.s"
    plain = run_program(cc1_command(c_source, plain_out))
    assert plain.returncode == 0, plain.stderr
    stats = tmp_path / "stats.json"
    res = under_runtime(cc1_command(c_source, out), policy, allocator, stats)
    same_as_plain(plain, res, f"cc1 under {policy}/{allocator}")
    assert out.read_bytes() == plain_out.read_bytes(), "cc1 wrote different assembly under the runtime"
    if policy == "callsite":
        assert pooled(stats) > 100, "cc1 allocates plenty of small objects: none pooled?"


@pytest.mark.parametrize("policy, allocator", configs())
def test_gcc_driver_compile_and_run(runtime_lib, c_source, tmp_path, policy, allocator):
    """gcc -O2 (cc1, as, collect2, ld all inherit LD_PRELOAD), then the binary itself."""
    plain_bin, rt_bin = tmp_path / "plain", tmp_path / "rt"
    plain = run_program(["gcc", "-O2", "-Wall", str(c_source), "-o", str(plain_bin)], cwd=str(tmp_path))
    assert plain.returncode == 0, plain.stderr
    res = under_runtime(["gcc", "-O2", "-Wall", str(c_source), "-o", str(rt_bin)], policy, allocator, None,
                        cwd=str(tmp_path))
    same_as_plain(plain, res, f"gcc under {policy}/{allocator}")
    assert rt_bin.exists()
    want = run_program([str(plain_bin)])
    assert want.returncode == 0 and want.stdout.count(b"\n") == 41
    got_plain_built = run_program([str(rt_bin)])
    same_as_plain(want, got_plain_built, "binary compiled under the runtime, run plainly")
    got_under_rt = under_runtime([str(rt_bin)], policy, allocator, None)
    same_as_plain(want, got_under_rt, "binary run under the runtime")


# ------------------------------------------------------------------ cmake -P (C++: std::string, vectors, new/delete)

CMAKE_SCRIPT = """cmake_minimum_required(VERSION 3.20)
set(acc "")
set(lst "")
foreach(i RANGE 1 4000)
  math(EXPR j "(${i} * 7919) % 1009")
  string(APPEND acc "item${j};")
  list(APPEND lst "k${j}")
endforeach()
list(SORT lst)
list(REMOVE_DUPLICATES lst)
list(LENGTH lst n)
string(LENGTH "${acc}" len)
string(SHA256 h "${acc}")
string(REGEX MATCHALL "item[0-9]*7;" m "${acc}")
list(LENGTH m nm)
string(JSON doc SET "{}" answer "${n}")
message(STATUS "unique ${n} length ${len} matches ${nm} sha ${h} json ${doc}")
"""


@pytest.mark.parametrize("policy, allocator", configs(extra_mimalloc=True))
def test_cmake_script(runtime_lib, tmp_path, policy, allocator):
    """A C++ program: cmake's interpreter allocates through operator new all the time."""
    skip_missing(allocator)
    cmake = need("cmake")
    script = tmp_path / "s.cmake"
    script.write_text(CMAKE_SCRIPT)
    plain = run_program([cmake, "-P", str(script)])
    assert plain.returncode == 0 and b"unique 1009" in plain.stdout, plain.stderr
    stats = tmp_path / "stats.json"
    res = under_runtime([cmake, "-P", str(script)], policy, allocator, stats)
    same_as_plain(plain, res, f"cmake -P under {policy}/{allocator}")
    if policy == "callsite":
        assert pooled(stats) > 1000, "cmake makes ~10^5 small C++ objects: none pooled?"


# ------------------------------------------------------------------ sqlite3

def sqlite_script() -> str:
    rnd = random.Random(7)
    lines = [
        "PRAGMA journal_mode=DELETE;",
        "CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);",
        "CREATE TABLE product(id INTEGER PRIMARY KEY, title TEXT, price REAL);",
        "CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER REFERENCES customer(id),"
        " product INTEGER REFERENCES product(id), qty INTEGER, note TEXT);",
        "CREATE INDEX orders_customer ON orders(customer);",
        "BEGIN;",
    ]
    cities = ["Oslo", "Lyon", "Porto", "Graz", "Turku", "Gent", "Brno", "Cork"]
    for i in range(1, 801):
        lines.append(f"INSERT INTO customer VALUES({i}, 'customer {i:04d}', '{rnd.choice(cities)}');")
    for i in range(1, 301):
        lines.append(f"INSERT INTO product VALUES({i}, 'product {i}', {rnd.randrange(100, 99999) / 100});")
    for i in range(1, 4001):
        note = "x" * rnd.randrange(0, 120)
        lines.append(f"INSERT INTO orders VALUES({i}, {rnd.randrange(1, 801)}, {rnd.randrange(1, 301)}, {rnd.randrange(1, 20)}, '{note}');")
    lines += [
        "COMMIT;",
        "UPDATE orders SET qty = qty + 1 WHERE id % 17 = 0;",
        "DELETE FROM orders WHERE id % 97 = 0;",
        ".mode list",
        "SELECT c.city, count(*), sum(o.qty), printf('%.2f', sum(o.qty * p.price)) FROM orders o"
        " JOIN customer c ON c.id = o.customer JOIN product p ON p.id = o.product"
        " GROUP BY c.city ORDER BY c.city;",
        "SELECT c.name, count(o.id) AS n FROM customer c LEFT JOIN orders o ON o.customer = c.id"
        " GROUP BY c.id ORDER BY n DESC, c.name LIMIT 15;",
        "SELECT p.title, sum(o.qty) s FROM product p JOIN orders o ON o.product = p.id"
        " GROUP BY p.id HAVING s > 60 ORDER BY s DESC, p.id;",
        "SELECT length(group_concat(note, ',')) FROM (SELECT note FROM orders ORDER BY length(note), id);",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 20000)"
        " SELECT count(*), sum(x), max(length(printf('%0*d', x % 200, x))) FROM n;",
        "PRAGMA integrity_check;",
    ]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("policy, allocator", configs())
def test_sqlite3(runtime_lib, tmp_path, policy, allocator):
    sqlite = need("sqlite3")
    script = sqlite_script().encode()
    (tmp_path / "plain").mkdir()
    (tmp_path / "rt").mkdir()
    plain = run_program([sqlite, "db.sqlite"], stdin=script, cwd=str(tmp_path / "plain"))
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.rstrip().endswith(b"ok") and len(plain.stdout.splitlines()) > 30
    stats = tmp_path / "stats.json"
    res = under_runtime([sqlite, "db.sqlite"], policy, allocator, stats, stdin=script, cwd=str(tmp_path / "rt"))
    same_as_plain(plain, res, f"sqlite3 under {policy}/{allocator}")
    dump_plain = run_program([sqlite, "db.sqlite", ".dump"], cwd=str(tmp_path / "plain"))
    dump_rt = under_runtime([sqlite, "db.sqlite", ".dump"], policy, allocator, None, cwd=str(tmp_path / "rt"))
    same_as_plain(dump_plain, dump_rt, "sqlite3 .dump of the database written under the runtime")
    if policy == "callsite":
        assert pooled(stats) > 0, "sqlite3 inserting thousands of rows pooled nothing"


# ------------------------------------------------------------------ multi-threaded: xz, sort

@pytest.fixture(scope="module")
def text_data(tmp_path_factory) -> Path:
    """~3 MB of compressible, not trivial, text."""
    rnd = random.Random(99)
    vocab = ["".join(rnd.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rnd.randrange(2, 10))) for _ in range(3000)]
    lines = [" ".join(rnd.choice(vocab) for _ in range(rnd.randrange(3, 16))) + f" {rnd.randrange(10**6)}"
             for _ in range(60000)]
    p = tmp_path_factory.mktemp("data") / "words.txt"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("policy, allocator", configs())
def test_xz_two_threads(runtime_lib, text_data, tmp_path, policy, allocator):
    xz = need("xz")
    comp = [xz, "-T2", "-2", "--block-size=512KiB", "-c", str(text_data)]
    plain = run_program(comp)
    assert plain.returncode == 0, plain.stderr
    res = under_runtime(comp, policy, allocator, None)
    same_as_plain(plain, res, f"xz -T2 compression under {policy}/{allocator}")  # xz -T output is deterministic
    packed = tmp_path / "words.txt.xz"
    packed.write_bytes(res.stdout)
    dec = under_runtime([xz, "-T2", "-d", "-c", str(packed)], policy, allocator, None)
    assert dec.returncode == 0, dec.stderr
    assert hashlib.sha256(dec.stdout).digest() == hashlib.sha256(text_data.read_bytes()).digest()


@pytest.mark.parametrize("policy, allocator", configs())
def test_sort_parallel(runtime_lib, text_data, tmp_path, policy, allocator):
    sort = need("sort")
    argv = [sort, "--parallel=2", "-S", "64M", "-k2,2", "-k1,1", str(text_data)]
    env = {"LC_ALL": "C"}
    plain = run_program(argv, env_extra=env)
    assert plain.returncode == 0, plain.stderr
    stats = tmp_path / "stats.json"
    res = under_runtime(argv, policy, allocator, stats, env_extra=env)
    same_as_plain(plain, res, f"sort --parallel=2 under {policy}/{allocator}")


# ------------------------------------------------------------------ exit status and signals

@pytest.mark.parametrize("policy, allocator", configs())
@pytest.mark.parametrize(
    "code, expect",
    [
        ("import sys; print('bye'); sys.exit(3)", 3),
        ("import os, sys; sys.stdout.write('partial'); sys.stdout.flush(); os._exit(42)", 42),
        ("import os, signal; print('x', flush=True); os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
        ("import os; os.abort()", -signal.SIGABRT),
        ("import ctypes; ctypes.string_at(0)", -signal.SIGSEGV),
    ],
    ids=["exit3", "_exit42", "SIGTERM", "SIGABRT", "SIGSEGV"],
)
def test_exit_status_and_signals(runtime_lib, policy, allocator, code, expect):
    argv = [PY, "-c", code]
    plain = run_program(argv)
    assert plain.returncode == expect, plain.stderr
    res = under_runtime(argv, policy, allocator, None)
    assert res.returncode == expect, res.stderr
    assert res.stdout == plain.stdout


@pytest.mark.parametrize("policy, allocator", configs())
def test_shell_pipeline_exit_code(runtime_lib, policy, allocator):
    """A shell (dash/bash) whose children inherit LD_PRELOAD, with a failing pipeline stage."""
    script = "seq 1 20000 | sort -r | head -n 3; printf 'x\\n' | grep -q y; echo status $?; exit 7"
    plain = run_program(["sh", "-c", script])
    res = under_runtime(["sh", "-c", script], policy, allocator, None)
    assert plain.returncode == 7
    same_as_plain(plain, res, "sh pipeline")
