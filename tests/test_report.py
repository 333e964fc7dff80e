"""`heaplayout report`: the page of a suite workload (halo_tokens, small input: profile, plan,
two simulations, a bench run) opened in headless Chromium; the screenshot is kept in the
test's directory and the rendered DOM is checked: every section there and filled, both
heatmap canvases painted by the page's script, the graph's nodes and groups, the bench
plot's rounds. Chromium is Debian's `chromium` package (scripts/setup.sh installs it); in
CI (CI=true) a missing browser fails the test instead of skipping it."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from heaplayout.profile_reader import read_profile
from report_inputs import ARGS, heaplayout, make_run

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None, reason="valgrind is not installed")

SECTIONS = ("summary", "heatmap", "affinity", "contexts", "bench")


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    if os.environ.get("CI") == "true":
        pytest.fail("headless Chromium is needed in CI: scripts/setup.sh installs the chromium package")
    pytest.skip("chromium is not installed (apt-get install chromium; scripts/setup.sh does it)")


def browser(*args: str) -> subprocess.CompletedProcess:
    # --no-sandbox: CI and these VMs run the tests as root, where Chromium's sandbox refuses to start
    argv = [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-extensions", "--virtual-time-budget=5000", *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120)


class Dom(HTMLParser):
    """Elements by id, with their attributes, and a count per tag."""

    def __init__(self) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str]] = {}
        self.tags: dict[str, list[dict[str, str]]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.tags.setdefault(tag, []).append(a)
        if "id" in a:
            self.by_id[a["id"]] = a

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def workload(build_dir: Path, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    run = make_run(build_dir, out)
    bench = out / "bench.json"
    r = heaplayout("bench", "--runs", "3", "--config", f"glibc,mimalloc,halo=plan={run.plan}", "--json", str(bench),
                   "--", *run.program, cwd=out)
    assert r.returncode == 0, r.stderr
    return run, bench, out


@pytest.fixture(scope="module")
def page(workload):
    run, bench, out = workload
    html = out / "report.html"
    r = heaplayout("report", "--profile", str(run.profile), "--plan", str(run.plan), "--bench", str(bench),
                   "--simulate", str(run.sim_before), "--simulate", str(run.sim_after), "-o", str(html), cwd=out)
    assert r.returncode == 0, r.stderr
    return html


def test_the_page_needs_no_network(page: Path):
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text and "@import" not in text
    # the only URL is SVG's namespace name, which a browser never fetches
    assert set(re.findall(r"https?://[^\"' <)]+", text)) <= {"http://www.w3.org/2000/svg"}


def test_report_rendered_in_headless_chromium(page: Path, workload, tmp_path: Path):
    run, _bench, _out = workload
    shot = tmp_path / "report.png"
    r = browser("--window-size=1300,3200", f"--screenshot={shot}", page.as_uri())
    assert shot.exists() and shot.stat().st_size > 50_000, r.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = browser("--dump-dom", page.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    (tmp_path / "report.dom.html").write_text(r.stdout)
    dom = Dom()
    dom.feed(r.stdout)
    for key in SECTIONS:
        assert key in dom.by_id, f"section {key} missing"
        assert dom.by_id[key].get("data-available") == "1", f"section {key} not filled"
    # the page's script ran and painted both heatmaps
    assert dom.tags["body"][0].get("data-heatmaps-drawn") == "2"
    for canvas in ("heatmap-before", "heatmap-after"):
        c = dom.by_id[canvas]
        assert int(c["data-cells"]) > 100, canvas
        assert int(c["data-painted"]) >= int(c["data-cells"]), canvas  # every cell covers at least a pixel
    # the graph: every accessed context a node, two groups drawn, names by symbol:line
    prof = read_profile(run.profile)
    nodes = [a for a in dom.tags["g"] if a.get("class") == "node"]
    assert len(nodes) == sum(1 for c in prof.contexts.values() if c.accesses > 0)
    clusters = {a["data-group"] for a in dom.tags["g"] if a.get("class") == "cluster"}
    from heaplayout.plan_format import read_plan
    from heaplayout.report.plan_groups import plan_grouping
    grouping = plan_grouping(read_plan(run.plan), prof)
    drawn = {c.id for c in prof.contexts.values() if c.accesses > 0}
    assert clusters == {str(grouping.group_of[c]) for c in drawn} and len(clusters) >= 2
    text = " ".join(dom.text)
    for name in ("create_a:47", "create_b:58", "create_c:74"):
        assert name in text
    # HALO's plan for halo_tokens puts A and B (created by create_a, create_b) together, C apart
    group_of = {a["data-context"]: a["data-group"] for a in nodes}
    a_ctx = next(c.id for c in prof.contexts.values() if any(
        (prof.frame_symbol(m, o) or None) and prof.frame_symbol(m, o).function == "create_a" for m, o in c.frames))
    b_ctx = next(c.id for c in prof.contexts.values() if any(
        (prof.frame_symbol(m, o) or None) and prof.frame_symbol(m, o).function == "create_b" for m, o in c.frames))
    assert group_of[str(a_ctx)] == group_of[str(b_ctx)] != "0"
    # tables and the bench plot: three configurations, three rounds each
    assert {"group-table", "context-table", "bench-table", "bench-plot", "affinity-graph"} <= set(dom.by_id)
    series = [a for a in dom.tags["g"] if a.get("class") == "series"]
    assert [s["data-label"] for s in series] == ["glibc", "mimalloc", "halo"]
    assert all(s["data-rounds"] == "3" for s in series)
    assert len([c for c in dom.tags["circle"] if "data-context" not in c]) >= 9  # the rounds' dots among the circles


def test_the_page_shows_misses_of_both_simulations(page: Path, workload):
    import json
    run, _bench, _out = workload
    text = page.read_text()
    for sim in (run.sim_before, run.sim_after):
        r = json.loads(sim.read_text())
        assert f"{r['levels'][0]['misses']:,}" in text  # the L1 total in the summary
    after = json.loads(run.sim_after.read_text())
    pool3 = next(p for p in after["pools"] if p["pool"] == 3)
    assert f"{pool3['misses'][0]:,}" in text  # group 1's misses: its pool under the plan


def test_the_plan_makes_the_modelled_heatmap_denser(workload):
    """halo_tokens walks A and B objects while C objects (70%) sit between them under glibc;
    the plan separates them, so the walks touch fewer distinct lines in the model."""
    from heaplayout.plan_format import read_plan
    from heaplayout.report.heatmap import build_heatmap
    from heaplayout.report.layout_model import allocator_layout, plan_layout
    from heaplayout.report.plan_groups import plan_grouping
    run, _bench, _out = workload
    prof, plan = read_profile(run.profile), read_plan(run.plan)
    grouping = plan_grouping(plan, prof)
    before = build_heatmap(prof, allocator_layout(prof))
    after = build_heatmap(prof, plan_layout(prof, plan, grouping.group_of))
    assert before.references == after.references == len(prof.stream)
    assert after.lines_per_window < 0.9 * before.lines_per_window
    assert [b[0] for b in after.bands if b[0].startswith("group")] != []


def test_report_without_inputs_and_with_a_wrong_file(tmp_path: Path, workload):
    run, _bench, _out = workload
    r = heaplayout("report", "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert r.returncode == 2 and "nothing to report" in r.stderr
    r = heaplayout("report", "--bench", str(run.sim_before), "-o", str(tmp_path / "r.html"), cwd=tmp_path)
    assert r.returncode == 2 and "heaplayout-bench/1" in r.stderr
    assert not (tmp_path / "r.html").exists()


def test_a_profile_alone_gives_every_section(tmp_path: Path, workload):
    run, _bench, _out = workload
    out = tmp_path / "p.html"
    r = heaplayout("report", "--profile", str(run.profile), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    dom = Dom()
    dom.feed(out.read_text())
    assert [dom.by_id[k]["data-available"] for k in SECTIONS] == ["1", "1", "1", "1", "0"]
    assert "heatmap-before" in dom.by_id and "heatmap-after" not in dom.by_id
    assert "no plan given" in out.read_text()


def test_optimize_writes_the_report(workload, tmp_path: Path):
    run, _bench, _out = workload
    out = tmp_path / "opt"
    r = heaplayout("optimize", "--train", " ".join(ARGS), "--allocator", "glibc", "--strategies", "halo",
                   "--race-rounds", "2", "--budget", "30", "--profile", str(run.profile), "-o", str(out), "--",
                   *run.program, cwd=tmp_path)
    assert r.returncode in (0, 1), r.stderr
    page = out / "report.html"
    assert page.exists() and f"report: {page}" in r.stdout
    dom = Dom()
    dom.feed(page.read_text())
    assert dom.by_id["recommendation"] and dom.by_id["bench"]["data-available"] == "1"
    assert "optimize.json" in page.read_text()
    # --no-report leaves it out
    r = heaplayout("optimize", "--train", " ".join(ARGS), "--allocator", "glibc", "--strategies", "halo",
                   "--race-rounds", "2", "--budget", "30", "--profile", str(run.profile), "--no-report",
                   "-o", str(tmp_path / "opt2"), "--", *run.program, cwd=tmp_path)
    assert r.returncode in (0, 1) and not (tmp_path / "opt2" / "report.html").exists()


def test_a_failing_report_only_warns(tmp_path: Path):
    from heaplayout.report.optimize_evidence import write_evidence_report
    bad = tmp_path / "bad.prof"
    bad.write_text("not a profile\n")
    doc = {"schema": "heaplayout-optimize/1", "profile": str(bad), "plans": {}, "candidates": []}
    page, why = write_evidence_report(tmp_path, doc)
    assert page is None and "not a heaplayout profile" in why


def test_hovering_a_heatmap_cell_says_what_it_holds(page: Path, tmp_path: Path):
    """A synthetic mousemove over the first map's busiest cell (the page's own handler runs)."""
    import json
    text = page.read_text()
    data = json.loads(re.search(r'<script type="application/json" id="heatmap-data">(.*?)</script>', text,
                                re.S).group(1).replace("<\\/", "</"))
    m = data["maps"][0]
    cells = m["cells"]
    k = max(range(0, len(cells), 3), key=lambda i: cells[i + 2])
    t, a, n = cells[k:k + 3]
    # the cell's centre in canvas pixels; the canvas is shown at its own size
    x = data["left"] + (t + 0.5) * 2
    y = (m["address_bins"] - 1 - a + 0.5) * 2
    probe = ('<script>(function(){var c=document.getElementById("heatmap-before");var r=c.getBoundingClientRect();'
             f'c.dispatchEvent(new MouseEvent("mousemove",{{clientX:r.left+c.clientLeft+{x},clientY:r.top+c.clientTop+{y}}}));'
             'document.body.setAttribute("data-probe",document.getElementById("heatmap-before-tip").textContent);'
             '})();</script></body>')
    probed = tmp_path / "probe.html"
    probed.write_text(text.replace("</body>", probe))
    r = browser("--window-size=1300,2000", "--dump-dom", probed.as_uri())
    dom = Dom()
    dom.feed(r.stdout)
    said = dom.tags["body"][0].get("data-probe", "")
    assert re.fullmatch(r"references [\d,]+–[\d,]+, addresses .+: (\d+) references", said), said
    assert said.endswith(f": {n} references"), (said, n)


def test_a_profile_without_heap_accesses_gives_a_page(tmp_path: Path):
    """/bin/true touches no heap object: the affinity section said nothing to draw and then
    read counts it had not returned (KeyError: 'contexts')."""
    prof = tmp_path / "true.prof"
    r = heaplayout("profile", "-o", str(prof), "--", "/bin/true", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "t.html"
    r = heaplayout("report", "--profile", str(prof), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert "no accessed contexts" in out.read_text()
