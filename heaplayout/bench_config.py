"""Configurations of `heaplayout bench`: the grammar of `--config`, the environment each
configuration gives the program, and the program's resolution on PATH.

    config  := [LABEL '='] spec
    spec    := base [':' OPTION '=' VALUE {',' OPTION '=' VALUE}]
    base    := ALLOCATOR | POLICY ['+' ALLOCATOR] ['=' ARGUMENT]

ALLOCATOR is a built-in name (glibc, jemalloc, mimalloc, tcmalloc) or the path of a shared
library that defines malloc (`/opt/lib/libfoo.so`, `plan+/opt/lib/libfoo.so=FILE`); a path
may not contain ':', ',' or '='.
docs/bench.md, "Configurations", describes it for users.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from typing import Sequence

from . import allocators, paths
from .runtime_env import (OPTION_VARIABLES, POLICIES, RuntimeConfig, allocator_env, huge_pages_on, option_problem,
                          runtime_env)

DEFAULT_CONFIGS = ("glibc", "jemalloc", "mimalloc", "tcmalloc", "off", "callsite")
# Policies the runtime will have; naming one that runtime_env does not know yet is a
# "not built yet" error rather than "unknown". (dpa was one until issue 23 built it.)
FUTURE_POLICIES: tuple[str, ...] = ()
# Policies whose spec carries an argument after '=' (the plan file), stored as this option.
ARGUMENT_POLICIES = {"plan": "plan"}

_LABEL_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


class BenchError(Exception):
    """A usage or setup problem: reported as one line, exit status 2."""


class ConfigError(BenchError):
    pass


# --------------------------------------------------------------------------- configurations


@dataclass(frozen=True)
class Config:
    """One way of running the program. `policy` None means a plain allocator."""

    label: str
    spec: str  # the spec as written (without the label)
    allocator: str = "glibc"
    policy: str | None = None
    options: tuple[tuple[str, str], ...] = ()

    @property
    def uses_runtime(self) -> bool:
        return self.policy is not None


def _builtin_names() -> set[str]:
    return set(allocators.ALLOCATORS) | set(POLICIES) | set(FUTURE_POLICIES)


def _is_label(head: str) -> bool:
    """Whether the text before the first '=' of a config is a label (else it is a spec)."""
    return bool(_LABEL_RE.match(head)) and head not in ARGUMENT_POLICIES


def parse_spec(spec: str, label: str | None = None) -> Config:
    """Parse SPEC (no label) into a Config; `label` defaults to the spec text."""
    label = spec if label is None else label
    if not spec:
        raise ConfigError(f"configuration {label!r} has an empty spec")
    base, sep, opt_text = spec.partition(":")
    argument: str | None = None
    if "=" in base:
        base, _, argument = base.partition("=")
    name, plus, alloc = base.partition("+")
    if plus and name not in POLICIES and name not in FUTURE_POLICIES and allocators.is_library_path(base):
        name, plus, alloc = base, "", ""  # a library path with '+' in it (libc++...), not POLICY+ALLOCATOR
    if plus and not alloc:
        raise ConfigError(f"configuration {label!r}: missing allocator after '+' in {spec!r}")

    options: dict[str, str] = {}
    if sep:
        if not opt_text:
            raise ConfigError(f"configuration {label!r}: no options after ':' in {spec!r}")
        for item in opt_text.split(","):
            key, eq, value = item.partition("=")
            if not eq or not key or not value:
                raise ConfigError(f"configuration {label!r}: option {item!r} is not NAME=VALUE")
            if key not in OPTION_VARIABLES:
                raise ConfigError(
                    f"configuration {label!r}: unknown runtime option {key!r}; known: {', '.join(OPTION_VARIABLES)}"
                )
            if key in options:
                raise ConfigError(f"configuration {label!r}: option {key!r} given twice")
            options[key] = value

    if (name in allocators.ALLOCATORS or allocators.is_library_path(name)) and not plus:
        # a plain allocator takes one option, its own huge-page setting (allocators.py)
        if argument is not None or set(options) - {"huge_pages"}:
            raise ConfigError(
                f"configuration {label!r}: {name!r} is a plain allocator; options and arguments apply only to "
                f"our policies (e.g. callsite+{name}:min_objects=10), except huge_pages"
            )
        if options:
            problem = option_problem("huge_pages", options["huge_pages"])
            if problem:
                raise ConfigError(f"configuration {label!r}: huge_pages {problem}")
            if huge_pages_on(options) and name not in allocators.HUGE_PAGE_SETTINGS:
                raise ConfigError(f"configuration {label!r}: {_no_huge_pages(name)}")
        return Config(label=label, spec=spec, allocator=name, options=tuple(options.items()))

    if name in FUTURE_POLICIES and name not in POLICIES:
        raise ConfigError(f"configuration {label!r}: the {name!r} policy is not built yet (spec {spec!r})")
    if name not in POLICIES:
        raise ConfigError(
            f"unknown configuration {spec!r}; use one of {', '.join(allocators.ALLOCATORS)} (plain allocators), "
            f"a library path such as /path/libfoo.so, {', '.join(POLICIES)} (our runtime on glibc), "
            "POLICY+ALLOCATOR, or NAME=SPEC"
        )
    if alloc and alloc not in allocators.ALLOCATORS and not allocators.is_library_path(alloc):
        raise ConfigError(
            f"configuration {label!r}: unknown allocator {alloc!r} in {spec!r}; choose one of: "
            f"{', '.join(allocators.ALLOCATORS)}, or a library path (with a '/')"
        )
    if name in ARGUMENT_POLICIES:
        if not argument:
            raise ConfigError(f"configuration {label!r}: the {name!r} policy needs a file: {name}=FILE")
        options[ARGUMENT_POLICIES[name]] = argument
    elif argument is not None:
        raise ConfigError(f"configuration {label!r}: policy {name!r} takes no '={argument}' argument")
    return Config(
        label=label,
        spec=spec,
        allocator=alloc or "glibc",
        policy=name,
        options=tuple(options.items()),
    )


def _no_huge_pages(name: str) -> str:
    try:
        allocators.huge_page_env(name)
    except allocators.UnknownAllocator as err:
        return str(err)
    return ""


def parse_config(text: str) -> Config:
    """Parse one `[LABEL=]SPEC`."""
    text = text.strip()
    head, eq, rest = text.partition("=")
    if eq and _is_label(head):
        if head in _builtin_names():
            raise ConfigError(f"label {head!r} is a built-in configuration name; pick another label")
        if head in OPTION_VARIABLES:
            raise ConfigError(f"label {head!r} is a runtime option name; pick another label")
        return parse_spec(rest, label=head)
    return parse_spec(text)


def split_config_list(value: str) -> list[str]:
    """Split a comma-separated --config value. A piece `OPTION=VALUE` (a runtime option
    name) continues the options of the configuration before it."""
    items: list[str] = []
    for piece in value.split(","):
        piece = piece.strip()
        key = piece.partition("=")[0]
        if items and "=" in piece and key in OPTION_VARIABLES and ":" in items[-1]:
            items[-1] += "," + piece
        elif piece:
            items.append(piece)
    return items


def parse_configs(values: Sequence[str] | None) -> list[Config]:
    """All --config values (repeatable, comma-separated) in order; the first is the baseline."""
    texts = [t for v in (values or [",".join(DEFAULT_CONFIGS)]) for t in split_config_list(v)]
    if not texts:
        raise ConfigError("no configuration given")
    configs = [parse_config(t) for t in texts]
    seen: set[str] = set()
    for c in configs:
        if c.label in seen:
            raise ConfigError(f"configuration {c.label!r} given twice; label repeats with NAME=SPEC")
        seen.add(c.label)
    return configs


def config_env(config: Config) -> dict[str, str]:
    """The variables a configuration adds to the program's environment. Raises BenchError
    when an allocator package or the runtime library is missing."""
    try:
        if not config.uses_runtime:
            return allocator_env(config.allocator, huge_pages=huge_pages_on(dict(config.options)))
        options = dict(config.options)
        plan = options.pop("plan", None)
        return runtime_env(RuntimeConfig(policy=config.policy or "off", allocator=config.allocator,
                                         options=options, plan=plan))
    except (ValueError, paths.MissingArtifact) as err:
        raise BenchError(f"configuration {config.label!r}: {err}") from None


def program_env(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    """The user's environment minus any LD_PRELOAD, plus the configuration's variables."""
    env = {k: v for k, v in base.items() if k != "LD_PRELOAD"}
    env.update(allocators.merge_settings(base, extra))
    return env


def resolve_program(program: Sequence[str]) -> list[str]:
    """The program with its executable resolved on PATH; BenchError if it cannot run."""
    if not program:
        raise BenchError("no program given; usage: heaplayout bench [options] -- PROG [ARGS...]")
    exe = program[0]
    found = shutil.which(exe) if "/" not in exe else (exe if os.path.isfile(exe) and os.access(exe, os.X_OK) else None)
    if found is None:
        if "/" in exe and os.path.exists(exe):
            raise BenchError(f"program not executable: {exe}")
        raise BenchError(f"program not found: {exe}")
    return [os.path.abspath(found), *program[1:]]


def config_text(c: Config) -> str:
    """The --config text that gives back `c`."""
    return c.spec if c.label == c.spec else f"{c.label}={c.spec}"
