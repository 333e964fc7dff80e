"""The search behind `heaplayout optimize`: the candidates, the race that drops losers early
within a time budget, and the rule that decides what to recommend (docs/optimize.md).

Nothing here runs a program or prints: the caller hands in a `Runner` that runs one
candidate once and returns its wall time, a `Clock`, and a `say` callback for progress, so
the whole search can be driven by synthetic times in tests.

1. **Race.** Rounds of every surviving candidate, in an order that rotates from round to
   round. After each round every time is taken relative to the *best allocator alone* of
   that round (paired ratios, docs/bench.md); from the second round on, a candidate is
   dropped when it is clearly slower than the leader (`clearly_slower`), an allocator alone
   only when it is clearly slower than the best allocator alone (it may still be the best
   one). When the budget cannot pay for another round of all survivors and the
   confirmation after it, the worse half of the strategies is dropped (successive halving).
2. **Confirmation.** The best strategies left (the *finalists*: the best candidate of each
   of the `finalists` leading strategy kinds) and every allocator alone left run by
   themselves, in rotating order, for fresh rounds that played no part in choosing them (the
   best of many candidates looks better on the rounds that chose it than it is).
3. **Decision** (`decide`): a finalist is recommended only if, on the confirmation rounds,
   the upper quartile of its paired ratios to each allocator alone left is below 1.0 and
   their median at most 1 - `min_gain`; of those that are, the fastest; otherwise the best
   allocator alone is. When the rounds were timed by CPU time (timing_metric.py), the
   median of the wall-time ratios must be below 1.0 too: wall time is what the user waits
   for, and a configuration could save CPU time while making the program wait (for the
   kernel's work on its behalf in another thread, say).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from . import allocators
from .bench_stats import Spread, paired_ratios, spread
from .planning import planner

ALONE = "alone"  # the allocator by itself, no runtime
HUGE_SUFFIX = "+thp"  # a candidate's label and kind on transparent huge pages
POLICY_STRATEGIES = ("callsite", "dpa")  # runtime policies that need no profile (dpa: docs/dpa.md)
DEFAULT_STRATEGIES = ("callsite", "halo", "halo-site", "halo-rest")


@dataclass(frozen=True)
class PlanVariant:
    """A plan `heaplayout plan` is asked for: its strategy and where ungrouped objects go."""

    name: str  # e.g. "halo-rest"
    strategy: str  # planner strategy
    rest: str  # "allocator" (HALO) or "callsite"
    plan_args: tuple[str, ...] = ()  # further `heaplayout plan` options


def plan_variants() -> dict[str, PlanVariant]:
    """Every plan variant by name: STRATEGY and STRATEGY-rest for each planner strategy.
    The planner's `callsite` strategy is called `plan-callsite` here, apart from the
    runtime's `callsite` policy."""
    out = {}
    for s in planner.STRATEGIES:
        name = "plan-callsite" if s == "callsite" else s
        out[name] = PlanVariant(name, s, "allocator")
        out[f"{name}-rest"] = PlanVariant(f"{name}-rest", s, "callsite")
    # HALO's groups told apart by the allocation's call site alone: no stack walk ever. The
    # profile cannot say whether exact identification repays its walks (planner.py,
    # DEFAULT_WALK_BUDGET); measuring both can.
    out["halo-site"] = PlanVariant("halo-site", "halo", "allocator", ("--walk-budget", "0"))
    # PreFix (docs/prefix.md): the paper's best variant, hot objects ordered by their hot data
    # streams with the other hot objects after them, in a preallocated region; the rest to the
    # allocator, or to HALO's groups (one plan file holds both).
    out["prefix"] = PlanVariant("prefix", "prefix:hds+hot", "allocator")
    out["prefix-halo"] = PlanVariant("prefix-halo", "prefix:hds+hot", "allocator", ("--prefix-rest", "halo"))
    # ... and with no stack walk at all: objects numbered per call site (the paper's own
    # context), HALO's groups told apart by call site (docs/prefix.md, "By call site")
    out["prefix-site"] = PlanVariant("prefix-site", "prefix:hds+hot", "allocator",
                                     ("--prefix-rest", "halo", "--walk-budget", "0"))
    return out


def strategy_names() -> tuple[str, ...]:
    return (*POLICY_STRATEGIES, *plan_variants())


@dataclass(frozen=True)
class Candidate:
    """One configuration optimize may recommend."""

    label: str  # name in tables and progress, e.g. "halo-rest+jemalloc"
    spec: str  # a `heaplayout bench --config` spec, e.g. "plan+jemalloc=/abs/prog.halo-rest.plan"
    allocator: str  # a built-in allocator name or a library path
    strategy: str  # ALONE, a policy strategy, or a plan variant name
    huge_pages: bool = False  # on transparent huge pages (the `huge_pages=1` option)

    @property
    def alone(self) -> bool:
        """An allocator as it ships: the yardstick. With its huge-page setting it is a
        candidate like our strategies, judged against the allocators as they ship."""
        return self.strategy == ALONE and not self.huge_pages

    @property
    def kind(self) -> str:
        """What the race tells apart when it picks finalists of different kinds."""
        return f"{self.strategy}{HUGE_SUFFIX}" if self.huge_pages else self.strategy


def candidate_spec(allocator: str, strategy: str, plan: Path | None = None, huge_pages: bool = False) -> str:
    """The bench configuration spec of `strategy` on `allocator` (glibc is left implicit)."""
    on = "" if allocator == "glibc" else f"+{allocator}"
    option = ":huge_pages=1" if huge_pages else ""
    if strategy == ALONE:
        return allocator + option
    if strategy in POLICY_STRATEGIES:
        return f"{strategy}{on}{option}"
    if plan is None:
        raise ValueError(f"strategy {strategy!r} needs a plan file")
    return f"plan{on}={plan}{option}"


def make_candidates(allocator_names: Sequence[str], strategies: Sequence[str],
                    plans: Mapping[str, Path]) -> list[Candidate]:
    """Every allocator alone first (in the given order), then each strategy on each
    allocator. A plan strategy without a plan in `plans` (planning failed) is left out."""
    short: dict[str, str] = {}
    for a in allocator_names:  # table names: library paths by file name, made unique
        name = allocators.display_name(a)
        n = 2
        while name in short.values():
            name, n = f"{allocators.display_name(a)}#{n}", n + 1
        short[a] = name
    out = [Candidate(short[a], candidate_spec(a, ALONE), a, ALONE) for a in allocator_names]
    for s in strategies:
        if s not in POLICY_STRATEGIES and s not in plans:
            continue
        for a in allocator_names:
            out.append(Candidate(f"{s}+{short[a]}", candidate_spec(a, s, plans.get(s)), a, s))
    return out


def huge_page_twin(c: Candidate) -> Candidate | None:
    """`c` on transparent huge pages: an allocator alone with its own setting for them (None
    for one without: tcmalloc, a library by path), a strategy with our pools and the
    allocator underneath (where it has the setting) on them."""
    if c.huge_pages or (c.alone and c.allocator not in allocators.HUGE_PAGE_SETTINGS):
        return None
    spec = c.spec + (",huge_pages=1" if ":" in c.spec else ":huge_pages=1")
    return Candidate(f"{c.label}{HUGE_SUFFIX}", spec, c.allocator, c.strategy, True)


# --------------------------------------------------------------------------- the rules


@dataclass(frozen=True)
class SearchSettings:
    race_rounds: int = 6  # at most this many rounds of all survivors
    confirm_rounds: int = 9  # confirmation rounds of the two finalists, budget permitting
    min_confirm_rounds: int = 5  # with fewer, nothing is resolved: the allocator alone is recommended
    # nothing is dropped on fewer rounds: on these shared machines a neighbour's burst made ten
    # candidates of one round run 2.8x their time, and glibc twice 2.4x in two rounds
    # (tests/commands/stdin_worker compute, 42 ms runs)
    min_drop_rounds: int = 3
    # an allocator alone may be the best one, against which everything is judged: dropping
    # it by mistake could let a slower strategy be recommended, so it needs more rounds, and
    # to be slower in every one of them (under load, glibc at 0.909, 1.073, 1.219, 1.712 of
    # tcmalloc on cxx_netsim had a lower quartile of 1.032)
    min_drop_rounds_alone: int = 4
    # dropped when the lower quartile (the minimum below 4 rounds) of its paired ratios to the
    # leader is above 1 + drop_margin: slower in every round (most rounds) by more than noise
    drop_margin: float = 0.03
    # the finalist's median ratio must be at most 1 - min_gain: a gain smaller than the
    # rounds can resolve on these machines is not worth a different allocator
    min_gain: float = 0.01
    # finalists confirmed, each the best of a different strategy: the race's leader is the
    # best of many on noisy rounds, so often the luckiest, and one strategy's variants on
    # four allocators crowd the top of the standings. On xsltproc (docs/results.md §17) the
    # race kept halo-site on three allocators, halved callsite away at 0.82, and halo-site's
    # best confirmed at 0.896 with an upper quartile of 1.01; 15 paired rounds then gave
    # callsite+tcmalloc 0.818 of tcmalloc. Each more finalist adds one run per confirmation
    # round and about doubles the chance that a tie passes the rule (below).
    finalists: int = 2
    # a strategy (or a huge-page setting) whose peak RSS passes this multiple of the best
    # allocator alone's is dropped, however fast: on the corpus the pool strategies peaked at
    # 1.0-1.9x the allocator's RSS, and our range on huge pages at 2.9x (yosys) and 15.6x
    # (cppcheck, many pools each backing a sparsely used 2 MiB page) (docs/results.md §32,
    # §33). 0 turns the guard off.
    max_rss_ratio: float = 2.0
    # huge pages scale configurations' times much alike, so a twin can beat the best
    # allocator alone (or its twin) only if its original stood near it: survivors more than
    # this behind the best alone after `min_drop_rounds` get no twin. The allocators' own
    # settings differed by up to 0.09 in what they gained on one program (lua5.4: jemalloc's
    # 0.945, mimalloc's 0.861 of jemalloc as shipped; docs/results.md §32).
    twin_margin: float = 0.10


def clearly_slower(ratios: Sequence[float], settings: SearchSettings, alone: bool = False) -> bool:
    """Whether paired ratios t_candidate / t_reference say the candidate is slower beyond noise."""
    if len(ratios) < max(1, settings.min_drop_rounds_alone if alone else settings.min_drop_rounds):
        return False
    low = min(ratios) if alone or len(ratios) < 4 else spread(ratios).q1
    return low > 1 + settings.drop_margin


Times = dict[str, dict[int, float]]  # label -> round -> wall seconds


def standing(times: Times, label: str, reference: str) -> float:
    """Median paired ratio of `label` to `reference` over their shared rounds (inf if none)."""
    r = paired_ratios(times.get(label, {}), times.get(reference, {}))
    return spread(r).median if r else math.inf


def best_alone(times: Times, alone: Sequence[str]) -> str | None:
    """The allocator alone with the lowest median paired ratio to the first of them (all
    survivors have run in every round, so any one of them is a fair common reference)."""
    ran = [a for a in alone if times.get(a)]
    if not ran:
        return None
    return min(ran, key=lambda a: (standing(times, a, ran[0]), ran.index(a)))


def finalists_of(times: Times, strategies: Sequence[str], kind: Mapping[str, str], best: str,
                 settings: SearchSettings) -> list[str]:
    """The strategies to confirm, so far: the leader (the lowest median ratio to `best`), then
    the best candidate of each next strategy kind (callsite, halo, ...), up to `finalists`
    kinds. A runner-up costs confirmation rounds, so it must stand where a win could be
    resolved: median ratio at most 1 - min_gain."""
    out: list[str] = []
    for s in sorted(strategies, key=lambda s: standing(times, s, best)):
        if len(out) == max(1, settings.finalists):
            break
        if out and standing(times, s, best) > 1.0 - settings.min_gain:
            break
        if kind[s] not in {kind[f] for f in out}:
            out.append(s)
    return out


@dataclass(frozen=True)
class Decision:
    recommended: str | None  # the label recommended (None: nothing could be measured)
    best_allocator: str | None
    finalist: str | None  # the best strategy after the race, if one was confirmed
    resolved: bool  # the finalist's advantage over every allocator alone left is resolved
    ratios: tuple[float, ...]  # confirmation rounds: t_finalist / t_best_allocator
    reason: str
    # confirmation rounds: t_finalist / t_allocator for every allocator alone confirmed
    ratios_by_allocator: dict[str, tuple[float, ...]] = field(default_factory=dict)
    finalists: tuple[str, ...] = ()  # every strategy confirmed (`finalist` is the one decided on)

    @property
    def summary(self) -> Spread | None:
        return spread(self.ratios) if self.ratios else None


def _beats(ratios: Sequence[float], settings: SearchSettings) -> bool:
    s = spread(ratios)
    return s.q3 < 1.0 and s.median <= 1.0 - settings.min_gain


def decide(best: str, finalist: str | None, ratios: Mapping[str, Sequence[float]],
           settings: SearchSettings, wall_ratios: Mapping[str, Sequence[float]] | None = None) -> Decision:
    """The decision rule. `ratios` holds, for each allocator alone confirmed (`best` among
    them), the confirmation rounds' paired ratios t_finalist / t_allocator. The finalist is
    recommended only if it beats every one of them: upper quartile below 1.0 and median at
    most 1 - min_gain. Which allocator alone is best is itself uncertain when two are close,
    and the promise is never to be slower than the best one, whichever it is. `wall_ratios`
    (the same rounds by wall time, when `ratios` are of CPU time): each median must be below
    1.0 as well."""
    by = {a: tuple(r) for a, r in ratios.items()}
    mine = by.get(best, ())
    if finalist is None:
        return Decision(best, best, None, False, mine, "no strategy reached the confirmation", by)
    n = min((len(r) for r in by.values()), default=0)
    if n < settings.min_confirm_rounds:
        return Decision(best, best, finalist, False, mine,
                        f"only {n} confirmation rounds (at least {settings.min_confirm_rounds} needed): "
                        f"the advantage of {finalist} is not resolved", by)
    losing = [a for a in by if not _beats(by[a], settings)]
    if not losing and wall_ratios:
        slower = [a for a in by if wall_ratios.get(a) and spread(wall_ratios[a]).median >= 1.0]
        if slower:
            a = best if best in slower else slower[0]
            w = spread(wall_ratios[a])
            return Decision(best, best, finalist, False, mine,
                            f"{finalist} took less CPU time than {a} alone (median ratio {spread(by[a]).median:.3f}) "
                            f"but not less wall time (median {w.median:.3f} over {w.n} confirmation rounds): what the "
                            "program waited for is not in its CPU time, so the advantage is not resolved", by)
    if not losing:
        s = spread(mine)
        others = [a for a in by if a != best]
        also = f" and every other allocator alone left ({', '.join(others)})" if others else ""
        return Decision(finalist, best, finalist, True, mine,
                        f"{finalist} is faster than {best} alone{also}: paired ratio to {best} median {s.median:.3f}, "
                        f"upper quartile {s.q3:.3f} < 1 over {s.n} confirmation rounds", by)
    a = best if best in losing else losing[0]
    s = spread(by[a])
    why = (f"upper quartile {s.q3:.3f} is not below 1" if s.q3 >= 1.0
           else f"median {s.median:.3f} is not below {1.0 - settings.min_gain:.3f}")
    return Decision(best, best, finalist, False, mine,
                    f"the advantage of {finalist} over {a} alone is not resolved ({why}; median {s.median:.3f} "
                    f"over {s.n} confirmation rounds)", by)


# --------------------------------------------------------------------------- the search


@dataclass(frozen=True)
class Measurement:
    seconds: float | None  # wall or CPU time (timing_metric.py), None when the run failed its check
    problem: str | None = None  # why the run does not count (output differs, crashed)
    wall_s: float | None = None  # the run's wall time when `seconds` is CPU time (the decision checks it)
    peak_rss_kib: int | None = None  # the run's peak resident memory (the memory guard)


Runner = Callable[[Candidate, str, int], Measurement]  # (candidate, phase, round)
Clock = Callable[[], float]
Say = Callable[[str], None]


@dataclass(frozen=True)
class Elimination:
    phase: str  # "warmup", "race", "halving" or "confirm"
    round: int
    reason: str


@dataclass
class SearchResult:
    candidates: list[Candidate]
    race: Times = field(default_factory=dict)
    confirm: Times = field(default_factory=dict)
    confirm_wall: Times = field(default_factory=dict)  # the confirmation's wall times, when timed by CPU
    eliminated: dict[str, Elimination] = field(default_factory=dict)
    race_rounds: int = 0
    decision: Decision | None = None
    stop_reason: str = ""
    overrun: str = ""  # why the search will end past the deadline (it always runs one full race round)
    peak_rss_kib: dict[str, list[int]] = field(default_factory=dict)  # every timed run's, per label

    def by_label(self) -> dict[str, Candidate]:
        return {c.label: c for c in self.candidates}


def _cost(times: Times, label: str) -> float:
    # a huge-page twin not raced yet costs what its original did
    vals = sorted((times.get(label) or times.get(label.removesuffix(HUGE_SUFFIX), {})).values())
    return vals[len(vals) // 2] if vals else 0.0


def run_search(candidates: Sequence[Candidate], run: Runner, deadline: float, clock: Clock,
               settings: SearchSettings = SearchSettings(), say: Say = lambda _m: None,
               warmup: Sequence[str] = (), twin: Callable[[Candidate], Candidate | None] | None = None) -> SearchResult:
    """Race, confirmation and decision (module docstring). `deadline` is a `clock()` value
    the search plans to end by; the first race round always runs in full. With `twin`
    (huge_page_twin), the allocators alone race their twins from the first round, and the
    strategies that survive `min_drop_rounds` rounds within `twin_margin` of the best
    allocator alone are joined by theirs, raced from then on like the others: a setting that multiplies every
    configuration's time alike is tried on the configurations still in the running, not on
    all of them from the start (which would double the first rounds' cost)."""
    res = SearchResult(list(candidates))
    if twin is not None:
        # an allocator's own setting was the largest lever measured on the corpus (0.84-0.90
        # of the best allocator as shipped on four of eight programs, docs/results.md §32):
        # its twins race from the first round, as many rounds as the yardsticks
        res.candidates += [t for t in (twin(c) for c in candidates if c.alone) if t is not None]
    cands = res.by_label()
    survivors = [c.label for c in res.candidates]
    res.race = {label: {} for label in survivors}

    def drop(label: str, phase: str, rnd: int, reason: str) -> None:
        if label in survivors:
            survivors.remove(label)
            res.eliminated[label] = Elimination(phase, rnd, reason)
            say(f"eliminated {label} ({phase} round {rnd}): {reason}")

    def alone_left() -> list[str]:
        return [s for s in survivors if cands[s].alone]

    warm: dict[str, float] = {}
    for label in warmup:
        m = run(cands[label], "warmup", 1)
        _note_rss(res, label, m)
        if m.problem:
            drop(label, "warmup", 1, m.problem)
        elif m.seconds is not None:
            warm[label] = m.seconds
    res.overrun = _first_round_overrun(survivors, warm, deadline, clock)
    if res.overrun:
        say(res.overrun)

    best: str | None = None
    rnd = 0
    while True:
        rnd += 1
        if rnd > 1 and not _halve_for_budget(res, survivors, best, deadline, clock, settings, drop, rnd):
            res.stop_reason = "the budget allows no further race round"
            break
        n = len(survivors)
        order = survivors[(rnd - 1) % n:] + survivors[:(rnd - 1) % n] if n else []
        say(f"race round {rnd}/{settings.race_rounds}: {n} candidates")
        for label in order:
            m = run(cands[label], "race", rnd)
            _note_rss(res, label, m)
            if m.problem:
                drop(label, "race", rnd, m.problem)
            elif m.seconds is not None:
                res.race[label][rnd] = m.seconds
        res.race_rounds = rnd
        best = best_alone(res.race, alone_left())
        if best is None:
            res.stop_reason = "no allocator alone ran with the reference output"
            break
        _eliminate(res, survivors, best, settings, drop, rnd)
        _drop_memory_hogs(res, survivors, best, settings, drop, rnd)
        say("standings (median ratio to " + best + "): " + ", ".join(
            f"{s} {standing(res.race, s, best):.3f}" for s in sorted(survivors, key=lambda s: standing(res.race, s, best))))
        if twin is not None and rnd == settings.min_drop_rounds and rnd < settings.race_rounds:
            # after the elimination: a strategy clearly slower than the leader now would be
            # about as much slower on huge pages, which scale both
            near = [s for s in survivors if standing(res.race, s, best) <= 1.0 + settings.twin_margin]
            added = [t for t in (twin(cands[s]) for s in near) if t is not None and t.label not in cands]
            for t in added:
                res.candidates.append(t)
                cands[t.label] = t
                survivors.append(t.label)
                res.race[t.label] = {}
            if added:
                say(f"joining the race from round {rnd + 1}, on transparent huge pages: "
                    + ", ".join(t.label for t in added))
        strategies = [s for s in survivors if not cands[s].alone]
        if rnd >= settings.race_rounds:
            res.stop_reason = f"{settings.race_rounds} race rounds done"
            break
        if len(strategies) == 1 and rnd >= settings.min_drop_rounds_alone:
            # the confirmation runs it against every allocator alone left; the rounds up to
            # here gave the allocators alone their chance to be dropped
            res.stop_reason = "one strategy left"
            break
        if not strategies and len(alone_left()) <= 1:
            res.stop_reason = "one allocator alone left"
            break

    if best is None:
        res.decision = Decision(None, None, None, False, (), res.stop_reason)
        return res
    best = best_alone(res.race, alone_left()) or best
    strategies = [s for s in survivors if not cands[s].alone]
    kind = {c.label: c.kind for c in res.candidates}
    finalists = finalists_of(res.race, strategies, kind, best, settings)
    if not finalists:
        res.decision = decide(best, None, {}, settings)
        return res
    race_ratio = standing(res.race, finalists[0], best)
    if race_ratio >= 1.0:
        res.decision = Decision(best, best, None, False, (),
                                f"no strategy was faster than {best} alone in the race (the best, {finalists[0]}, "
                                f"at median ratio {race_ratio:.3f})")
        return res
    res.decision = _confirm(res, best, finalists, run, deadline, clock, settings, say, drop, alone_left())
    return res


def _first_round_overrun(survivors: Sequence[str], warm: Mapping[str, float], deadline: float, clock: Clock) -> str:
    """A warning when the first race round, which always runs in full (a decision needs every
    candidate measured once), will by the warm-up's times end past the deadline: a
    candidate not warmed up is costed as the slowest warm-up."""
    if not warm or not survivors:
        return ""
    slowest = max(warm.values())
    need = sum(warm.get(s, slowest) for s in survivors)
    left = deadline - clock()
    if need <= left:
        return ""
    return (f"the budget left ({max(0.0, left):.0f} s) does not pay for one race round of {len(survivors)} candidates "
            f"(about {need:.0f} s by the warm-up runs): optimize will overrun it; a larger --budget or fewer "
            "--strategies keeps it")


def _eliminate(res: SearchResult, survivors: list[str], best: str, settings: SearchSettings,
               drop: Callable[[str, str, int, str], None], rnd: int) -> None:
    """Drop the survivors clearly slower than the leader (allocators alone: than `best`), or,
    when a runner-up strategy kind is to be confirmed too (finalists_of), than that runner-up:
    only the finalists can be recommended, and the leader of noisy rounds may be the lucky one."""
    cands = res.by_label()
    kind = {c.label: c.kind for c in res.candidates}
    leader = min(survivors, key=lambda s: standing(res.race, s, best))
    kept = finalists_of(res.race, [s for s in survivors if not cands[s].alone], kind, best, settings)
    strategy_ref = kept[-1] if len(kept) > 1 else leader
    for label in list(survivors):
        if label in (best, leader, strategy_ref):
            continue
        ref = best if cands[label].alone else strategy_ref
        ratios = paired_ratios(res.race[label], res.race[ref])
        if clearly_slower(ratios, settings, alone=cands[label].alone):
            drop(label, "race", rnd, f"clearly slower than {ref}: paired ratios "
                 + ", ".join(f"{r:.3f}" for r in ratios))


def _note_rss(res: SearchResult, label: str, m: Measurement) -> None:
    if m.peak_rss_kib:
        res.peak_rss_kib.setdefault(label, []).append(m.peak_rss_kib)


def rss_ratio(res: SearchResult, label: str, reference: str) -> float | None:
    """Median peak RSS of `label` over that of `reference` (None when either is unknown)."""
    mine, ref = res.peak_rss_kib.get(label), res.peak_rss_kib.get(reference)
    if not mine or not ref:
        return None
    return spread(mine).median / max(1.0, spread(ref).median)


def _drop_memory_hogs(res: SearchResult, survivors: list[str], best: str, settings: SearchSettings,
                      drop: Callable[[str, str, int, str], None], rnd: int) -> None:
    """Drop every strategy whose peak RSS passes `max_rss_ratio` times the best allocator
    alone's: a faster run bought with that much memory is not what the user asked for, and
    peak RSS varies little from run to run, so one round tells."""
    if settings.max_rss_ratio <= 0:
        return
    cands = res.by_label()
    for label in list(survivors):
        if cands[label].alone:
            continue
        r = rss_ratio(res, label, best)
        if r is not None and r > settings.max_rss_ratio:
            mib = spread(res.peak_rss_kib[label]).median / 1024
            drop(label, "race", rnd, f"peak RSS {mib:.0f} MiB, {r:.1f}x {best} alone's (more than "
                 f"--max-rss-ratio {settings.max_rss_ratio:g})")


def _halve_for_budget(res: SearchResult, survivors: list[str], best: str | None, deadline: float, clock: Clock,
                      settings: SearchSettings, drop: Callable[[str, str, int, str], None], rnd: int) -> bool:
    """While another race round of all survivors plus the confirmation would overrun the
    deadline, drop the worse half of the strategies other than the finalists-to-be (the
    best of each of the leading strategy kinds, finalists_of). Allocators alone are kept:
    the best of them is the yardstick. False when no round fits."""
    if best is None:
        return False
    cands = res.by_label()
    kind = {c.label: c.kind for c in res.candidates}
    while True:
        strategies = [s for s in survivors if not cands[s].alone]
        kept = finalists_of(res.race, strategies, kind, best, settings)
        confirm_round = sum(_cost(res.race, s) for s in survivors if cands[s].alone)
        reserve = settings.min_confirm_rounds * (confirm_round + sum(_cost(res.race, f) for f in kept))
        if clock() + sum(_cost(res.race, s) for s in survivors) + reserve <= deadline:
            return True
        # a twin that joined late stands where its original does until it has the rounds a
        # drop needs: one round of a busy machine put lua5.4's mimalloc+thp at 1.38 of
        # mimalloc (section 33), and huge pages scale configurations much alike
        def rank(s: str) -> float:
            own = len(res.race.get(s, {})) >= settings.min_drop_rounds or not cands[s].huge_pages
            return standing(res.race, s if own else s.removesuffix(HUGE_SUFFIX), best)
        others = sorted((s for s in strategies if s not in kept), key=rank)
        if not others:
            return False
        for label in others[len(others) // 2:]:
            own = rank(label) == standing(res.race, label, best)
            drop(label, "halving", rnd, f"the budget does not pay for another round of {len(survivors)} candidates; "
                 f"median ratio {rank(label):.3f}{'' if own else ' (its original’s, as it has fewer rounds)'}, "
                 "in the worse half")


def _confirm(res: SearchResult, best: str, finalists: list[str], run: Runner, deadline: float, clock: Clock,
             settings: SearchSettings, say: Say, drop: Callable[[str, str, int, str], None],
             alone: Sequence[str]) -> Decision:
    """Fresh rounds of the finalists and every allocator alone left, in rotating order; then
    the decision on them: among the finalists that pass the rule (`decide`), the one with the
    lowest median ratio to the best allocator alone."""
    cands = res.by_label()
    names = ", ".join(finalists)
    group = [*alone, *finalists]
    per_round = sum(_cost(res.race, label) for label in group)
    affordable = int((deadline - clock()) / per_round) if per_round > 0 else settings.confirm_rounds
    planned = max(0, min(settings.confirm_rounds, affordable))
    if planned < settings.min_confirm_rounds:
        return Decision(best, best, finalists[0], False, (),
                        f"the budget left allows {planned} confirmation rounds of {names} against the allocators "
                        f"alone (at least {settings.min_confirm_rounds} needed): the advantage of {finalists[0]} is "
                        "not resolved", finalists=tuple(finalists))
    res.confirm = {label: {} for label in group}
    say(f"confirmation: {names} against {', '.join(alone)} alone, {planned} rounds")
    live = list(finalists)
    for k in range(1, planned + 1):
        shift = (k - 1) % len(group)
        for label in group[shift:] + group[:shift]:
            if label not in alone and label not in live:
                continue
            m = run(cands[label], "confirm", k)
            _note_rss(res, label, m)
            if m.problem:
                drop(label, "confirm", k, m.problem)
                if label in alone:  # the yardstick itself failed: nothing can be decided
                    return Decision(None, best, finalists[0], False, (),
                                    f"{label} failed its output check in the confirmation",
                                    finalists=tuple(finalists))
                live.remove(label)
                del res.confirm[label]
                res.confirm_wall.pop(label, None)
                continue
            res.confirm[label][k] = m.seconds or 0.0
            if m.wall_s is not None:
                res.confirm_wall.setdefault(label, {})[k] = m.wall_s
        if not live:
            return Decision(best, best, finalists[0], False, (),
                            f"{names} failed {'its' if len(finalists) == 1 else 'their'} output check in the "
                            "confirmation", finalists=tuple(finalists))
        say(f"confirm round {k}/{planned}: " + ", ".join(
            f"{f} / {a} = {res.confirm[f][k] / res.confirm[a][k]:.3f}" for f in live for a in alone
            if res.confirm[a].get(k, 0) > 0 and k in res.confirm[f]))
    # the best allocator alone on every round the allocators ran together, race and confirmation
    both: Times = {a: {**res.race[a], **{1000 + k: v for k, v in res.confirm[a].items()}} for a in alone}
    best = best_alone(both, alone) or best
    def wall(f: str) -> dict[str, list[float]] | None:
        if not res.confirm_wall:
            return None
        return {a: paired_ratios(res.confirm_wall.get(f, {}), res.confirm_wall.get(a, {})) for a in alone}
    decisions = [decide(best, f, {a: paired_ratios(res.confirm[f], res.confirm[a]) for a in alone}, settings,
                        wall(f)) for f in live]
    won = [d for d in decisions if d.resolved]
    if won:
        d = min(won, key=lambda d: spread(d.ratios).median)
    else:
        d = decisions[0]
        if len(decisions) > 1:
            d = dataclasses.replace(d, reason=d.reason + "; " + "; ".join(
                o.reason.replace("the advantage of ", "nor that of ", 1) for o in decisions[1:]))
    return dataclasses.replace(d, finalists=tuple(finalists))
