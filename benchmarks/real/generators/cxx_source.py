"""C++ sources for cppcheck: classes with containers, templates, ownership and some defects.

cppcheck tokenizes, simplifies templates, builds a symbol database and runs value-flow
analysis; all of it is lists and maps of small C++ objects per token. The generator writes
several files of classes, member functions with loops and branches, and a sprinkling of
the bugs cppcheck looks for (uninitialized members, out-of-bounds indices, leaks), so the
checkers have something to report.
"""

from __future__ import annotations

import random

from . import words


def _function(rng: random.Random, cls: str, i: int) -> str:
    n = rng.randint(4, 40)
    body = [f"    std::vector<int> v({n});", "    int total = 0;"]
    for k in range(rng.randint(2, 6)):
        kind = rng.random()
        if kind < 0.3:
            body.append(f"    for (int i = 0; i < {n}; ++i) {{ v[i] = i * {k + 1} + m_{k % 3}; total += v[i]; }}")
        elif kind < 0.5:
            body.append(f"    if (total > {rng.randint(0, 500)}) {{ names.push_back(std::to_string(total)); }}"
                        f" else {{ total -= {rng.randint(1, 9)}; }}")
        elif kind < 0.65:
            body.append(f"    std::map<std::string, int>::iterator it = index.find(\"k{k}\");"
                        f" if (it != index.end()) total += it->second;")
        elif kind < 0.75:
            body.append(f"    int arr[{n}]; arr[{n if rng.random() < 0.3 else n - 1}] = total;"
                        f" total += arr[{n - 1}];")
        elif kind < 0.85:
            body.append(f"    char *buf = new char[{n}]; buf[0] = 'a'; total += buf[0];"
                        + (" delete[] buf;" if rng.random() < 0.7 else ""))
        else:
            body.append(f"    for (std::size_t j = 0; j < names.size(); j++) total += names[j].size();")
    body.append("    return total;")
    return f"int {cls}::f{i}(int a) {{\n" + "\n".join(body) + "\n}\n"


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    names = words(rng, params["classes"] * params["files"], lo=5, hi=9)
    for f in range(params["files"]):
        out = ["#include <map>", "#include <string>", "#include <vector>", "",
               "template <typename T> struct Box { T value; T get() const { return value; } };", ""]
        for c in range(params["classes"]):
            cls = names[f * params["classes"] + c].capitalize() + str(c)
            nfun = rng.randint(2, params["methods"])
            decls = "\n".join(f"    int f{i}(int a);" for i in range(nfun))
            init = "m_0(0), m_1(1)" + (", m_2(2)" if rng.random() < 0.7 else "")
            out.append(f"class {cls} {{\npublic:\n    {cls}() : {init} {{}}\n{decls}\nprivate:\n"
                       f"    int m_0, m_1, m_2;\n    std::vector<std::string> names;\n"
                       f"    std::map<std::string, int> index;\n    Box<long> box;\n}};\n")
            out += [_function(rng, cls, i) for i in range(nfun)]
        files[f"src{f}.cpp"] = "\n".join(out).encode()
    return files
