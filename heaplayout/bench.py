"""The engine behind `heaplayout bench`: configurations, interleaved runs, statistics,
output checks and cachegrind counts. Nothing here prints; progress goes through a callback.

A *configuration* is one way of running the unmodified program: a plain allocator
(`glibc`, `jemalloc`, ...) or our runtime with a policy on top of an allocator
(`callsite`, `off+mimalloc`, ...), optionally with runtime options and a label:

    config  := [LABEL '='] spec
    spec    := base [':' OPTION '=' VALUE {',' OPTION '=' VALUE}]
    base    := ALLOCATOR | POLICY ['+' ALLOCATOR] ['=' ARGUMENT]

`ARGUMENT` is for policies that take one: `plan=FILE` (and `plan+mimalloc=FILE`) names the
plan file of the `plan` policy. A label can be neither a built-in name nor an option
name, so `small=callsite:min_objects=10,max_size=256` and `plan=out.plan` are unambiguous.
docs/bench.md describes the statistics and the JSON written from `result_to_json`.

The engine is split by concern; this module gathers their public names so that
`from heaplayout import bench` keeps working:

| module | what |
|---|---|
| `bench_config.py` | the configuration grammar, a configuration's environment, program resolution |
| `bench_launch.py` | one run: the launcher, exit status, peak RSS, output files |
| `bench_check.py` | output checks against the reference run |
| `bench_cachegrind.py` | cachegrind geometry, runs and parsing |
| `bench_stats.py` | medians, quartiles, paired ratios |
| `bench_run.py` | the interleaved benchmark (`run_bench`) and its results |
| `bench_report.py` | JSON, tables, markdown, the suite table |
"""

from __future__ import annotations

from .bench_cachegrind import (DEFAULT_D1, DEFAULT_LL, CacheCounts, CachegrindParseError, CacheSpec,
                               check_cache_geometry, parse_cachegrind, run_cachegrind)
from .bench_check import Mismatch, compare_run, first_difference, stderr_tail
from .bench_config import (ARGUMENT_POLICIES, DEFAULT_CONFIGS, FUTURE_POLICIES, BenchError, Config, ConfigError,
                           config_env, config_text, parse_config, parse_configs, parse_spec, program_env,
                           resolve_program, split_config_list)
from .bench_launch import (PYTHON_LAUNCHER, ExitStatus, RunResult, build_launcher, fmt_seconds, launcher_rss_floor,
                           run_once, sha256_file)
from .bench_report import (JSON_SCHEMA, SUITE_JSON_SCHEMA, SuiteEntry, command_line, describe_run, format_markdown,
                           format_table, result_to_json, select_workloads, suite_rows, suite_to_json, table_rows)
from .bench_run import BenchResult, ConfigResult, Progress, read_runtime_stats, run_bench, schedule
from .bench_stats import Spread, paired_ratios, spread

__all__ = [
    "ARGUMENT_POLICIES", "DEFAULT_CONFIGS", "DEFAULT_D1", "DEFAULT_LL", "FUTURE_POLICIES", "JSON_SCHEMA",
    "PYTHON_LAUNCHER", "SUITE_JSON_SCHEMA", "BenchError", "BenchResult", "CacheCounts", "CacheSpec",
    "CachegrindParseError", "Config", "ConfigError", "ConfigResult", "ExitStatus", "Mismatch", "Progress",
    "RunResult", "Spread", "SuiteEntry", "build_launcher", "check_cache_geometry", "command_line", "compare_run",
    "config_env", "config_text", "describe_run", "first_difference", "fmt_seconds", "format_markdown",
    "format_table", "launcher_rss_floor", "paired_ratios", "parse_cachegrind", "parse_config", "parse_configs",
    "parse_spec", "program_env", "read_runtime_stats", "resolve_program", "result_to_json", "run_bench",
    "run_cachegrind", "run_once", "schedule", "select_workloads", "sha256_file", "split_config_list", "spread",
    "stderr_tail", "suite_rows", "suite_to_json", "table_rows",
]
