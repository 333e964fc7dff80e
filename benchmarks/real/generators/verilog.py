"""Verilog for yosys: a datapath of adders, multipliers, muxes and a state machine.

Yosys elaborates the design into RTLIL (C++ objects per cell, wire and signal bit), then
`synth -noabc` runs dozens of passes that create, rewrite and delete cells; all of it is
small objects in maps and pools. `-noabc` keeps the external ABC process out, so the
measured time is yosys's own.
"""

from __future__ import annotations

import random


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    w, units = params["width"], params["units"]
    out = [f"module top(input clk, input rst, input [{w - 1}:0] a, b, c, input [3:0] sel, output reg [{w - 1}:0] y);"]
    out.append(f"  reg [{w - 1}:0] r [0:{units - 1}];")
    out.append("  reg [2:0] state;")
    for u in range(units):
        op = rng.choice(["+", "-", "*", "^", "&"])
        src1 = "a" if u == 0 else f"r[{u - 1}]"
        src2 = rng.choice(["b", "c", f"r[{rng.randrange(u)}]" if u else "c"])
        shift = rng.randint(0, 3)
        out.append(f"  always @(posedge clk) if (rst) r[{u}] <= {u}; else if (sel[{u % 4}]) r[{u}] <= ({src1} {op} {src2}) >> {shift};"
                   f" else r[{u}] <= {src1} ^ {{{src2}[{w // 2 - 1}:0], {src2}[{w - 1}:{w // 2}]}};")
    cases = "\n".join(f"      3'd{s}: begin y <= r[{rng.randrange(units)}] + r[{rng.randrange(units)}]; "
                      f"state <= (a[{s}] ? 3'd{(s + 1) % 8} : 3'd{rng.randrange(8)}); end" for s in range(8))
    out.append(f"  always @(posedge clk) if (rst) begin state <= 0; y <= 0; end else case (state)\n{cases}\n    endcase")
    out.append("endmodule")
    return {"design.v": ("\n".join(out) + "\n").encode()}
