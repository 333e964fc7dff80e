"""optimize's search on synthetic round data: candidates and their specs, the race that drops
losers, budget halving, and the decision rule (heaplayout/optimize_search.py)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from heaplayout import bench
from heaplayout.optimize_search import (Candidate, Measurement, SearchSettings, clearly_slower, decide,
                                        huge_page_twin, make_candidates, run_search)

PLAN = Path("/plans/p.plan")


def candidates(allocs=("glibc", "jemalloc", "tcmalloc"), strategies=("callsite", "halo")) -> list[Candidate]:
    return make_candidates(list(allocs), list(strategies), {"halo": PLAN})


class FakeProgram:
    """Runs take `true[label]` seconds times noise; the clock advances by each run."""

    def __init__(self, true: dict[str, float], noise: float = 0.01, seed: int = 1,
                 confirm_true: dict[str, float] | None = None, broken: set[str] = frozenset(),
                 wall: dict[str, float] | None = None, rss: dict[str, int] | None = None):
        self.true, self.noise, self.rng = true, noise, random.Random(seed)
        self.rss = rss or {}  # peak RSS in KiB per label (default 100 MiB)
        self.wall = wall  # runs timed by CPU time: each run's wall time is t times wall[label] (default 1)
        self.confirm_true = confirm_true or {}
        self.broken = broken
        self.now = 0.0
        self.calls: list[tuple[str, str, int]] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, cand: Candidate, phase: str, rnd: int) -> Measurement:
        self.calls.append((cand.label, phase, rnd))
        base = self.confirm_true.get(cand.label, self.true[cand.label]) if phase == "confirm" else self.true[cand.label]
        t = base * (1 + self.rng.uniform(-self.noise, self.noise))
        self.now += t
        if cand.label in self.broken:
            return Measurement(None, "output differs from the reference run (glibc): stdout line 1")
        rss = self.rss.get(cand.label, 100 * 1024)
        if self.wall is not None:
            return Measurement(t, wall_s=t * self.wall.get(cand.label, 1.0), peak_rss_kib=rss)
        return Measurement(t, peak_rss_kib=rss)


def times(**ratios: float) -> dict[str, float]:
    """Run times of every default candidate: 1.0 s unless given (labels with '+' as '_')."""
    out = {c.label: 1.0 for c in candidates()}
    out.update({k.replace("__", "+"): v for k, v in ratios.items()})
    return out


def test_candidates_and_their_bench_specs():
    cs = candidates(("glibc", "jemalloc", "/opt/lib/libfoo.so"), ("callsite", "dpa", "halo", "hds"))
    got = {c.label: (c.spec, c.strategy) for c in cs}
    assert list(got)[:3] == ["glibc", "jemalloc", "libfoo.so"]
    assert got["callsite+glibc"] == ("callsite", "callsite")
    assert got["dpa+jemalloc"] == ("dpa+jemalloc", "dpa")  # a policy: no plan needed
    assert got["callsite+jemalloc"] == ("callsite+jemalloc", "callsite")
    assert got["halo+glibc"] == (f"plan={PLAN}", "halo")
    assert got["halo+libfoo.so"] == (f"plan+/opt/lib/libfoo.so={PLAN}", "halo")
    assert not any(c.strategy == "hds" for c in cs)  # no hds plan was made
    for c in cs:  # every spec is a configuration bench accepts as it is
        parsed = bench.parse_config(c.spec)
        assert parsed.allocator == c.allocator and (parsed.policy is None) == c.alone


def test_resolved_win_recommends_the_strategy():
    prog = FakeProgram(times(glibc=1.02, tcmalloc=1.3, halo__jemalloc=0.8, halo__glibc=0.85))
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    d = res.decision
    assert d.best_allocator == "jemalloc" and d.finalist == "halo+jemalloc"
    assert d.resolved and d.recommended == "halo+jemalloc"
    assert len(d.ratios) == SearchSettings.confirm_rounds and d.summary.q3 < 0.85
    # the confirmation ran the finalist and the allocators alone left (tcmalloc, 1.3x, was
    # dropped after 4 rounds), in rotating order
    assert res.eliminated["tcmalloc"].round == SearchSettings.min_drop_rounds_alone
    confirm = [(label, rnd) for label, phase, rnd in prog.calls if phase == "confirm"]
    assert confirm[:6] == [("glibc", 1), ("jemalloc", 1), ("halo+jemalloc", 1),
                           ("jemalloc", 2), ("halo+jemalloc", 2), ("glibc", 2)]
    assert set(d.ratios_by_allocator) == {"glibc", "jemalloc"}


def test_a_cpu_time_win_must_show_in_wall_time_too():
    """Timed by CPU time, halo on jemalloc takes 0.8 of the CPU time; if its runs wait so
    that their wall time is 1.3x their CPU time (the allocators' 1.0x), the user would wait
    longer: not recommended. When the wall clock shows the gain as well, it is."""
    cpu = times(glibc=1.02, tcmalloc=1.3, halo__jemalloc=0.8, halo__glibc=0.85)
    prog = FakeProgram(cpu, wall={"halo+jemalloc": 1.3, "halo+glibc": 1.3})
    d = run_search(candidates(), prog, deadline=1e9, clock=prog.clock).decision
    assert d.finalist == "halo+jemalloc" and not d.resolved and d.recommended == "jemalloc"
    assert "not less wall time" in d.reason
    prog = FakeProgram(cpu, wall={"halo+jemalloc": 1.05})
    d = run_search(candidates(), prog, deadline=1e9, clock=prog.clock).decision
    assert d.resolved and d.recommended == "halo+jemalloc"


def test_unresolved_gain_recommends_the_allocator_alone():
    """A strategy 0.5% faster under 3% noise: not resolved, so the allocator alone."""
    prog = FakeProgram(times(glibc=1.1, tcmalloc=1.3, halo__jemalloc=0.995), noise=0.03, seed=7)
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    d = res.decision
    assert d.recommended == "jemalloc" and not d.resolved
    assert "not resolved" in d.reason or "no strategy was faster" in d.reason


def test_losers_are_eliminated_early():
    prog = FakeProgram(times(tcmalloc=1.5, callsite__tcmalloc=1.6, halo__tcmalloc=1.55, halo__glibc=0.7))
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    s = SearchSettings()
    for label in ("callsite+tcmalloc", "halo+tcmalloc"):
        e = res.eliminated[label]
        assert (e.phase, e.round) == ("race", s.min_drop_rounds) and "clearly slower than halo+glibc" in e.reason
        assert len(res.race[label]) == s.min_drop_rounds
    # an allocator alone needs more rounds: it might be the yardstick
    assert res.eliminated["tcmalloc"].round == s.min_drop_rounds_alone
    # one strategy left once the allocators alone had their rounds: on to the confirmation
    assert res.race_rounds == s.min_drop_rounds_alone and res.stop_reason == "one strategy left"
    assert len(res.race["halo+glibc"]) == res.race_rounds
    assert res.decision.recommended == "halo+glibc"


def test_the_decision_uses_fresh_rounds_only():
    """A strategy that looked 10% faster in the race but is not: the confirmation rounds,
    which did not choose it, decide."""
    prog = FakeProgram(times(halo__glibc=0.9), confirm_true={"halo+glibc": 1.0}, noise=0.02)
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    assert res.decision.finalist == "halo+glibc" and not res.decision.resolved
    assert res.decision.recommended in ("glibc", "jemalloc", "tcmalloc")


def test_a_candidate_with_a_wrong_output_is_never_recommended():
    prog = FakeProgram(times(halo__glibc=0.5, halo__jemalloc=0.8), broken={"halo+glibc"})
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    assert "output differs" in res.eliminated["halo+glibc"].reason
    assert res.decision.recommended == "halo+jemalloc"


def test_budget_halves_the_field_and_is_kept():
    """Budget for 4.5 rounds of everything: the race halves the strategies, keeps every
    allocator alone, and still confirms (5 rounds of 3 allocators and the finalist) within
    the deadline."""
    true = times(glibc=1.1, halo__jemalloc=0.8)
    prog = FakeProgram(true)
    deadline = 4.5 * sum(true.values())
    res = run_search(candidates(), prog, deadline=deadline, clock=prog.clock)
    halved = [label for label, e in res.eliminated.items() if e.phase == "halving"]
    assert halved and not any(label in ("glibc", "jemalloc", "tcmalloc") for label in halved)
    assert prog.now <= deadline
    assert res.decision.recommended == "halo+jemalloc" and res.decision.resolved


def test_no_budget_for_confirmation_means_the_allocator_alone():
    true = times(halo__jemalloc=0.8)
    prog = FakeProgram(true)
    res = run_search(candidates(), prog, deadline=1.2 * sum(true.values()), clock=prog.clock)
    assert res.race_rounds == 1 and res.decision.recommended in ("glibc", "jemalloc", "tcmalloc")
    assert not res.decision.resolved and "confirmation rounds" in res.decision.reason


def test_a_budget_short_of_one_race_round_is_said_and_overrun():
    """The first race round always runs in full; when the warm-up times say it will end past
    the deadline, the search says so (optimize adds it to its notes) instead of overrunning
    silently. With a budget that pays for it, nothing is said."""
    true = times()
    warm = ["glibc", "jemalloc", "tcmalloc", "callsite+glibc"]
    said: list[str] = []
    prog = FakeProgram(true)
    res = run_search(candidates(), prog, deadline=0.5 * sum(true.values()), clock=prog.clock, say=said.append,
                     warmup=warm)
    assert "does not pay for one race round of" in res.overrun and res.overrun in said
    assert res.race_rounds == 1 and prog.now > 0.5 * sum(true.values())
    prog = FakeProgram(true)
    assert run_search(candidates(), prog, deadline=1e9, clock=prog.clock, warmup=warm).overrun == ""


@pytest.mark.parametrize("ratios, winner", [
    ([0.80, 0.82, 0.79, 0.81, 0.80], "plan"),  # resolved
    ([0.90, 0.95, 1.02, 0.97, 1.01, 1.05, 0.94], "alone"),  # median 0.97, upper quartile 1.015
    ([0.995, 0.994, 0.996, 0.995, 0.993], "alone"),  # always faster, by less than min_gain
    ([0.80, 0.80, 0.80, 0.80], "alone"),  # too few rounds
])
def test_decision_rule(ratios, winner):
    d = decide("mimalloc", "plan", {"mimalloc": ratios}, SearchSettings())
    assert d.recommended == ("plan" if winner == "plan" else "mimalloc")
    assert d.resolved == (winner == "plan")


def test_the_finalist_must_beat_every_allocator_alone_left():
    """Two allocators alone within noise of each other: either may be the best one, so a
    strategy that beats only one of them is not recommended."""
    win = [0.90, 0.91, 0.89, 0.90, 0.92]
    tie = [0.99, 1.02, 0.98, 1.01, 1.00]
    d = decide("jemalloc", "callsite+glibc", {"jemalloc": win, "glibc": tie}, SearchSettings())
    assert d.recommended == "jemalloc" and not d.resolved and "over glibc alone" in d.reason
    d = decide("jemalloc", "callsite+glibc", {"jemalloc": win, "glibc": win}, SearchSettings())
    assert d.recommended == "callsite+glibc" and d.resolved


def test_clearly_slower_needs_rounds():
    s = SearchSettings()
    assert not clearly_slower([3.0, 3.0], s)  # two rounds decide nothing
    assert clearly_slower([1.2, 1.1, 1.05], s)
    assert not clearly_slower([1.2, 1.1, 1.01], s)  # one round within noise
    assert not clearly_slower([1.2, 1.1, 1.05], s, alone=True)  # an allocator alone needs 4 rounds,
    assert clearly_slower([1.2, 1.1, 1.05, 1.2], s, alone=True)
    assert clearly_slower([1.2, 1.1, 1.05, 1.2, 0.9], s)  # a strategy: lower quartile 1.05
    assert not clearly_slower([1.2, 1.1, 1.05, 1.2, 0.9], s, alone=True)  # and slower in every one


def test_the_runner_up_strategy_is_confirmed_too():
    """The race's leader was lucky (halo+glibc looked 20% faster, is not), and a real win of
    another strategy (callsite+jemalloc, 12%) stood second: both are confirmed, each the best
    of its strategy, and the one that holds is recommended. With one finalist the lucky one
    alone would have been confirmed, and the allocator alone recommended."""
    true = times(glibc=1.05, tcmalloc=1.2, halo__glibc=0.80, halo__jemalloc=0.83, callsite__jemalloc=0.88)
    prog = FakeProgram(true, confirm_true={"halo+glibc": 1.0, "halo+jemalloc": 1.0})
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    d = res.decision
    assert d.finalists == ("halo+glibc", "callsite+jemalloc")  # not halo's second allocator
    assert d.resolved and d.recommended == "callsite+jemalloc" and d.finalist == "callsite+jemalloc"
    confirmed = {label for label, phase, _ in prog.calls if phase == "confirm"}
    assert {"halo+glibc", "callsite+jemalloc"} <= confirmed and "halo+jemalloc" not in confirmed
    # one finalist: the lucky leader only, unresolved
    prog = FakeProgram(true, confirm_true={"halo+glibc": 1.0, "halo+jemalloc": 1.0})
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock, settings=SearchSettings(finalists=1))
    assert res.decision.finalists == ("halo+glibc",) and not res.decision.resolved


def test_a_runner_up_no_faster_than_the_allocator_alone_is_not_confirmed():
    prog = FakeProgram(times(glibc=1.05, tcmalloc=1.2, halo__jemalloc=0.8))  # callsite: 1.0
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    assert res.decision.finalists == ("halo+jemalloc",) and res.decision.recommended == "halo+jemalloc"
    assert not any(label.startswith("callsite") for label, phase, _ in prog.calls if phase == "confirm")


def test_a_finalist_failing_its_output_check_leaves_the_other():
    prog = FakeProgram(times(glibc=1.05, tcmalloc=1.2, halo__glibc=0.8, callsite__jemalloc=0.88))
    true_broken = {"halo+glibc"}

    def run(cand, phase, rnd):
        m = prog(cand, phase, rnd)
        if phase == "confirm" and cand.label in true_broken:
            return Measurement(None, "output differs from the reference run (glibc): stdout line 1")
        return m
    res = run_search(candidates(), run, deadline=1e9, clock=prog.clock)
    assert res.eliminated["halo+glibc"].phase == "confirm"
    assert res.decision.recommended == "callsite+jemalloc" and res.decision.resolved


def test_huge_page_twins_and_their_bench_specs():
    cs = make_candidates(["glibc", "tcmalloc", "/opt/lib/libfoo.so"], ["callsite", "halo"], {"halo": PLAN})
    twins = {c.label: huge_page_twin(c) for c in cs}
    # tcmalloc and a library by path have no huge-page setting of their own: no twin alone
    assert twins["tcmalloc"] is None and twins["libfoo.so"] is None
    g = twins["glibc"]
    assert (g.label, g.spec, g.alone, g.kind) == ("glibc+thp", "glibc:huge_pages=1", False, "alone+thp")
    assert twins["halo+tcmalloc"].spec == f"plan+tcmalloc={PLAN}:huge_pages=1"
    assert twins["callsite+libfoo.so"].kind == "callsite+thp" and huge_page_twin(g) is None
    opt = Candidate("x", "callsite:max_size=64", "glibc", "callsite")
    assert huge_page_twin(opt).spec == "callsite:max_size=64,huge_pages=1"
    for t in [t for t in twins.values() if t] + [huge_page_twin(opt)]:  # specs bench takes as they are
        assert dict(bench.parse_config(t.spec).options)["huge_pages"] == "1", t.spec


def test_twins_join_the_survivors_and_win_only_where_the_rounds_resolve_it():
    cs = make_candidates(["glibc", "jemalloc", "tcmalloc"], ["callsite"], {})
    true = {c.label: 1.0 for c in cs}
    true["callsite+glibc"] = 1.3  # dropped before the twins join: it gets none
    true.update({"glibc+thp": 1.0, "jemalloc+thp": 0.8, "callsite+jemalloc+thp": 0.9, "callsite+tcmalloc+thp": 1.0})
    prog = FakeProgram(true)
    res = run_search(cs, prog, deadline=1e9, clock=prog.clock, twin=huge_page_twin)
    joined = {label for label, phase, rnd in prog.calls if label.endswith("+thp")}
    # callsite+glibc (1.3x) and callsite+jemalloc (1.0, slower than jemalloc+thp's 0.8 in three
    # rounds) are dropped before the strategies' twins join: they get none
    assert "callsite+glibc+thp" not in joined and "tcmalloc+thp" not in joined and "jemalloc+thp" in joined
    first = {}
    for label, phase, rnd in prog.calls:
        if label.endswith("+thp") and phase == "race":
            first.setdefault(label, rnd)
    # the allocators' own settings race from the start, the strategies' twins after three rounds
    assert first["jemalloc+thp"] == first["glibc+thp"] == 1
    assert res.decision.resolved and res.decision.recommended == "jemalloc+thp"
    tie = FakeProgram({**{c.label: 1.0 for c in cs}, **{f"{c.label}+thp": 1.0 for c in cs}}, noise=0.05)
    res = run_search(cs, tie, deadline=1e9, clock=tie.clock, twin=huge_page_twin)
    assert not res.decision.resolved and res.decision.recommended in ("glibc", "jemalloc", "tcmalloc")


def test_huge_pages_auto_follows_the_kernels_mode(tmp_path):
    from heaplayout.commands.optimize import huge_pages_wanted
    mode = tmp_path / "enabled"
    for text, want in [("always [madvise] never\n", True), ("[always] madvise never\n", False),
                       ("always madvise [never]\n", False)]:
        mode.write_text(text)
        on, note = huge_pages_wanted("auto", mode)
        assert on == want and (note == "") == want, text
    assert huge_pages_wanted("auto", tmp_path / "none")[0] is False
    assert huge_pages_wanted("on", tmp_path / "none") == (True, "")
    assert huge_pages_wanted("off", mode) == (False, "")


def test_a_strategy_that_multiplies_memory_is_dropped_however_fast():
    true = times(jemalloc=0.9, halo__jemalloc=0.6, callsite__jemalloc=0.8)
    rss = {"halo+jemalloc": 3 * 100 * 1024, "callsite+jemalloc": 190 * 1024}  # 3x and 1.9x jemalloc's
    prog = FakeProgram(true, rss=rss)
    res = run_search(candidates(), prog, deadline=1e9, clock=prog.clock)
    e = res.eliminated["halo+jemalloc"]
    assert e.round == 1 and "3.0x jemalloc alone's" in e.reason
    assert res.decision.recommended == "callsite+jemalloc"  # 1.9x passes the default 2.0
    free = FakeProgram(true, rss=rss)
    res = run_search(candidates(), free, deadline=1e9, clock=free.clock, settings=SearchSettings(max_rss_ratio=0))
    assert "halo+jemalloc" not in res.eliminated and res.decision.recommended == "halo+jemalloc"
    # a huge-page twin is a strategy for the guard, as is an allocator on its own huge-page setting
    cs = make_candidates(["glibc", "jemalloc"], ["callsite"], {})
    hp = FakeProgram({**{c.label: 1.0 for c in cs}, "jemalloc+thp": 0.7, "glibc+thp": 1.0,
                      "callsite+glibc+thp": 1.0, "callsite+jemalloc+thp": 1.0}, rss={"jemalloc+thp": 250 * 1024})
    res = run_search(cs, hp, deadline=1e9, clock=hp.clock, twin=huge_page_twin)
    assert res.eliminated["jemalloc+thp"].round == 1 and res.decision.recommended != "jemalloc+thp"


def test_only_survivors_near_the_best_allocator_get_twins():
    """Noisy rounds (±30%) keep callsite+jemalloc, 1.25x, through round 3 at 1.27 of glibc:
    beyond twin_margin, so it gets no twin; callsite+glibc at 1.08 gets one."""
    cs = make_candidates(["glibc", "jemalloc"], ["callsite"], {})
    true = {c.label: 1.0 for c in cs}
    true["callsite+jemalloc"] = 1.25
    true.update({f"{c.label}+thp": true[c.label] for c in cs})

    def joined(settings: SearchSettings) -> set[str]:
        prog = FakeProgram(true, noise=0.3, seed=12)
        res = run_search(cs, prog, deadline=1e9, clock=prog.clock, twin=huge_page_twin, settings=settings)
        assert res.eliminated["callsite+jemalloc"].round == 4  # it was still in the race at round 3
        strategy_twins = [(label, rnd) for label, phase, rnd in prog.calls if label.startswith("callsite+")
                          and label.endswith("+thp") and phase == "race"]
        assert min(rnd for _, rnd in strategy_twins) == 4  # they join after three rounds
        return {label for label, _ in strategy_twins}

    assert joined(SearchSettings()) >= {"callsite+glibc+thp"}
    assert "callsite+jemalloc+thp" not in joined(SearchSettings())
    assert "callsite+jemalloc+thp" in joined(SearchSettings(twin_margin=0.5))
