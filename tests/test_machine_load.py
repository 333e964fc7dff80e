"""The busy-machine note of optimize (heaplayout/machine_load.py)."""

from __future__ import annotations

from heaplayout import machine_load


def test_quiet_machine_has_no_note():
    s = machine_load.summary([1.0, 1.2, 1.4], cpus=2)
    assert s == {"cpus": 2, "median": 1.2, "max": 1.4, "samples": 3}
    assert machine_load.busy_note(s) is None


def test_other_work_of_half_a_cpu_is_said():
    s = machine_load.summary([1.4, 1.6, 4.8], cpus=2)
    note = machine_load.busy_note(s)
    assert note is not None and "median 1.6, up to 4.8, on 2 CPUs" in note
    assert machine_load.busy_note(machine_load.summary([])) is None


def test_sample_reads_the_load_average():
    load = machine_load.sample()
    assert load is None or load >= 0.0
