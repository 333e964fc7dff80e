"""A Lua program: the object-heavy work scripts do (tables of tables, strings, closures).

Parts: a symbol table of records rebuilt in rounds, binary trees built and checked, string
building with gsub/format, a sort with a comparator closure, and a small interpreter for a
generated expression list (tables as AST nodes). The seed picks the data and the mix, so
the training and measuring scripts differ in shape, not only in size.
"""

from __future__ import annotations

import random

from . import words


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    vocab = words(rng, params["vocab"])
    exprs = []
    for _ in range(params["exprs"]):
        a, b, c = rng.randint(1, 99), rng.randint(1, 99), rng.randint(1, 9)
        exprs.append(f'{{op="{rng.choice("+-*")}", l={{op="num", v={a}}}, '
                     f'r={{op="{rng.choice("+*")}", l={{op="num", v={b}}}, r={{op="num", v={c}}}}}}}')
    vocab_text = ", ".join(f'"{w}"' for w in vocab)
    src = f"""
local vocab = {{{vocab_text}}}
local exprs = {{{", ".join(exprs)}}}
local seed = {rng.randint(1, 2**30)}
local function rand(n) seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n + 1 end

local function tree(d) if d == 0 then return {{}} end return {{tree(d - 1), tree(d - 1)}} end
local function check(t) if t[1] then return 1 + check(t[1]) + check(t[2]) end return 1 end

local function eval(e)
  if e.op == "num" then return e.v end
  local l, r = eval(e.l), eval(e.r)
  if e.op == "+" then return l + r elseif e.op == "-" then return l - r else return l * r end
end

local total, nodes, strings = 0, 0, 0
for round = 1, {params["rounds"]} do
  local syms = {{}}
  for i = 1, {params["records"]} do
    local w = vocab[rand(#vocab)]
    local rec = syms[w]
    if not rec then rec = {{name = w, refs = {{}}, n = 0}}; syms[w] = rec end
    rec.n = rec.n + 1
    rec.refs[#rec.refs + 1] = {{line = i, col = rand(80), text = w .. ":" .. i}}
  end
  local list = {{}}
  for _, rec in pairs(syms) do list[#list + 1] = rec end
  table.sort(list, function(a, b) if a.n ~= b.n then return a.n > b.n end return a.name < b.name end)
  total = total + list[1].n + #list
  for d = 4, {params["depth"]} do nodes = nodes + check(tree(d)) end
  local parts = {{}}
  for i = 1, {params["strings"]} do
    parts[#parts + 1] = string.format("%s=%d;", vocab[rand(#vocab)], i)
  end
  local s = table.concat(parts)
  s = s:gsub("(%a+)=(%d+)", function(k, v) return v .. ":" .. k:upper() end)
  strings = strings + #s
  for _, e in ipairs(exprs) do total = (total + eval(e)) % 1000000007 end
end
print("total", total, "nodes", nodes, "strings", strings)
"""
    return {"main.lua": src.encode()}
