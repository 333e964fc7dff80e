"""`heaplayout report`: one self-contained HTML page about a program's heap and a plan's
effect (docs/report.md). Each section is its own module; page.py assembles them."""

from .inputs import ReportInputs, load_inputs
from .page import write_report

__all__ = ["ReportInputs", "load_inputs", "write_report"]
