"""A GNU MathProg model for glpsol: capacitated facility location (a mixed-integer program).

glpsol translates the model (sets, parameters and constraints as lists of small records),
builds the LP matrix row by row, solves the relaxation and branches; the generated data
sets the size. The model prints its own summary with printf.
"""

from __future__ import annotations

import random


def generate(params: dict, rng: random.Random) -> dict[str, bytes]:
    f, c = params["facilities"], params["customers"]
    model = """
set F; set C;
param fixed{F} >= 0; param cap{F} >= 0; param demand{C} >= 0; param cost{F, C} >= 0;
var open{F} binary; var x{F, C} >= 0, <= 1;
minimize total: sum{i in F} fixed[i] * open[i] + sum{i in F, j in C} cost[i, j] * demand[j] * x[i, j];
s.t. serve{j in C}: sum{i in F} x[i, j] = 1;
s.t. capacity{i in F}: sum{j in C} demand[j] * x[i, j] <= cap[i] * open[i];
s.t. link{i in F, j in C}: x[i, j] <= open[i];
solve;
printf "objective %.3f\\n", total;
printf "open %d of %d\\n", sum{i in F} open[i], card(F);
printf{i in F: open[i] > 0.5} "facility %s serves %.3f\\n", i, sum{j in C} demand[j] * x[i, j];
data;
"""
    pts_f = [(rng.random(), rng.random()) for _ in range(f)]
    pts_c = [(rng.random(), rng.random()) for _ in range(c)]
    demand = [rng.randint(5, 35) for _ in range(c)]
    total = sum(demand)
    lines = [model, "set F := " + " ".join(f"f{i}" for i in range(f)) + ";",
             "set C := " + " ".join(f"c{j}" for j in range(c)) + ";",
             "param fixed := " + " ".join(f"f{i} {rng.randint(200, 900)}" for i in range(f)) + ";",
             "param cap := " + " ".join(f"f{i} {rng.randint(total // f * 2, total // f * 4)}" for i in range(f)) + ";",
             "param demand := " + " ".join(f"c{j} {d}" for j, d in enumerate(demand)) + ";",
             "param cost :=" ]
    for i, (fx, fy) in enumerate(pts_f):
        lines.append(" ".join(f"[f{i},c{j}] {int(100 * ((fx - cx) ** 2 + (fy - cy) ** 2) ** 0.5)}"
                              for j, (cx, cy) in enumerate(pts_c)))
    lines += [";", "end;"]
    return {"model.mod": ("\n".join(lines) + "\n").encode()}
