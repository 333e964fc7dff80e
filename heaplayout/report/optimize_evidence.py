"""The report `heaplayout optimize` leaves in its evidence directory (report.html) from its
own optimize.json: the profile and the plan it made, its race rounds and recommendation.

The plan drawn is the recommended strategy's, else the plain HALO plan optimize measured (the
page then says the plan was not recommended), else the first plan made. A failure here never
fails optimize: the caller gets a warning to print.
"""

from __future__ import annotations

import json
from pathlib import Path

from .inputs import ReportError, ReportInputs
from .page import write_report

REPORT_NAME = "report.html"


def plan_to_draw(doc: dict) -> Path | None:
    plans = {k: Path(v) for k, v in (doc.get("plans") or {}).items()}
    rec = doc.get("recommendation") or {}
    if rec.get("strategy") in plans:
        return plans[rec["strategy"]]
    if "halo" in plans:
        return plans["halo"]
    return next(iter(plans.values()), None)


def write_evidence_report(out_dir: Path, doc: dict) -> tuple[Path | None, str | None]:
    """(the report written, None) or (None, why it was not)."""
    json_path = out_dir / "optimize.json"
    try:
        if not json_path.exists():
            json_path.write_text(json.dumps(doc, indent=2) + "\n")
        profile = Path(doc["profile"]) if doc.get("profile") else None
        inputs = ReportInputs(profile=profile if profile is not None and profile.exists() else None,
                              plan=plan_to_draw(doc), optimize=json_path)
        if inputs.profile is None:
            inputs.plan = None  # a plan's groups are drawn on a profile's contexts
        target = out_dir / REPORT_NAME
        write_report(inputs, target)
        return target, None
    except (ReportError, OSError) as err:
        return None, f"the HTML report was not written: {err}"
    except Exception as err:  # noqa: BLE001 - a bug in the page must not cost the measurements already written
        return None, f"the HTML report was not written: internal error {type(err).__name__}: {err}"
