"""Writes the plan conformance cases: one CASE.plan per case and cases.toml with what each
must give. Both readers must give it: heaplayout/plan_format.py (read_plan) and the
runtime's runtime/src/plan_parse.c (through tests/runtime/plan_parse_check); the check is
tests/test_plan_conformance.py. The verdicts below were written by hand from
docs/plan-format.md; run this script again after changing a case:
    python3 tests/data/plan_conformance/make_cases.py
"""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent

HEAD = b"heaplayout-plan 1\nstrategy halo\nchunk_size 1048576\nmax_object_size 4096\n"
MOD = b"module 0 9a1c0ef3 /work/prog\n"
G1 = b"group 1 3 100\n"


def plan(*body: bytes, head: bytes = HEAD) -> bytes:
    return head + b"".join(body) + b"end\n"


def select(*lines: str) -> bytes:
    return "".join(line + "\n" for line in lines).encode()


# (name, text, verdict, line, reason substring, what it covers)
CASES: list[tuple[str, bytes, str, int, str, str]] = [
    # ---- valid plans ----
    ("minimal", plan(), "valid", 0, "", "the four required records and end"),
    ("documented_example", b"heaplayout-plan 1\n# made by hand\n\nstrategy halo\nchunk_size 0x100000\n"
     b"max_object_size 4096\nmin_align 8\nrest callsite 128\nrecursion function\n"
     b"module 0 9a1c0ef3 /work/main/build/workloads/fp/halo_tokens\nmodule 1 - /opt/my lib/libx.so\n"
     b"skip libc.so.6\nskip libstdc++.so.6\ngroup 1 3 812345 packed\ngroup 2 2 40211\n"
     b"select 1 0:0x1a2b\nselect 1 0:0x1a40 0:0x1c07\nselect 2 0:0x1a40 1:1c31\nselect 0 0:0x1a40 0:0x1c07 0:0x99\n"
     b"end\n# a comment after end\n\n", "valid", 0, "", "every record, comments, blank lines"),
    ("offset_largest", plan(MOD, G1, select("select 1 0:0x7fffffffffff")), "valid", 0, "",
     "the largest frame offset, 2^47 - 1"),
    ("offset_upper_hex", plan(MOD, G1, select("select 1 0:0X1A2B 0:1a2B")), "valid", 0, "",
     "0X and upper-case hex digits"),
    ("leading_zeros", plan(MOD, b"group 01 3 5\n", select("select 01 00:0x0010")), "valid", 0, "",
     "decimal numbers with leading zeros"),
    ("counts_largest", plan(MOD, b"group 1 18446744073709551615 0xffffffffffffffff\n"), "valid", 0, "",
     "group counts up to 2^64 - 1"),
    ("build_id_64_bytes", plan(b"module 0 " + b"ab" * 64 + b" /p\n"), "valid", 0, "", "a 64-byte build-id"),
    ("path_511_bytes", plan(b"module 0 - /" + b"p" * 510 + b"\n"), "valid", 0, "", "a module path of 511 bytes"),
    ("path_utf8", plan("module 0 - /opt/bibliothèque/libé.so\n".encode()), "valid", 0, "", "a UTF-8 module path"),
    ("skip_name_127_bytes", plan(b"skip " + b"s" * 127 + b"\n"), "valid", 0, "", "a skip name of 127 bytes"),
    ("modules_64", plan(*(f"module {i} - /m{i}\n".encode() for i in range(64))), "valid", 0, "", "64 modules"),
    ("skips_32", plan(*(f"skip lib{i}.so\n".encode() for i in range(32))), "valid", 0, "", "32 skip records"),
    ("groups_4093", plan(MOD, *(f"group {g} 1 1\n".encode() for g in range(1, 4094)),
                         select("select 4093 0:0x10")), "valid", 0, "", "4093 groups, the runtime's pool ids"),
    ("frames_16", plan(MOD, G1, select("select 1" + "".join(f" 0:0x{i + 16:x}" for i in range(16)))),
     "valid", 0, "", "a rule of 16 frames"),
    ("select_group_0", plan(MOD, G1, select("select 1 0:0x10", "select 0 0:0x10 0:0x20")), "valid", 0, "",
     "group 0 (ungrouped) for a longer chain"),
    # ---- issue 19, finding 1: frame offsets past 2^47 (crashed every program) ----
    ("finding1_offset_2_48", plan(MOD, G1, select("select 1 0:0x1a2b", "select 1 0:0xffff00000000150f")),
     "invalid", 8, "frame offset 0xffff00000000150f: out of range", "the issue's example"),
    ("finding1_offset_2_47", plan(MOD, G1, select("select 1 0:0x800000000000")), "invalid", 7,
     "out of range (at most 0x7fffffffffff)", "one past the largest offset"),
    ("finding1_hex_overflow", plan(MOD, G1, select("select 1 0:0x1ffffffffffffffffff")), "invalid", 7,
     "frame offset 0x1ffffffffffffffffff: out of range", "a hex offset past 2^64"),
    ("finding1_number_overflow", plan(MOD, G1, select("select 1 0:0x10 0:123456789abcdef0123")), "invalid", 7,
     "frame offset 123456789abcdef0123: out of range", "an offset past 2^64 without 0x"),
    # ---- finding 2: select lines with a leading space (overflowed the rule array) ----
    ("finding2_leading_space", plan(MOD, G1, select(*[" select 1 0:0x10"] * 9)), "invalid", 7,
     "fields must be separated by single spaces", "nine select lines with a leading space"),
    ("finding2_double_space", plan(MOD, G1, select("select 1  0:0x10")), "invalid", 7,
     "fields must be separated by single spaces", "two spaces between fields"),
    ("finding2_trailing_space", plan(MOD, G1, select("select 1 0:0x10 ")), "invalid", 7,
     "fields must be separated by single spaces", "a space at the end of a line"),
    # ---- finding 4: numbers accepted silently, the group limit, looser Python ----
    ("finding4_chunk_size_overflow", plan(head=HEAD.replace(b"1048576", b"18446744073710600192")), "invalid", 3,
     "chunk_size 18446744073710600192: must be a power of two from 256K to 64M", "2^64 + 1 MiB (became 1 MiB)"),
    ("finding4_module_index_2_64", plan(b"module 18446744073709551616 - /p\n"), "invalid", 5,
     "module indexes must be 0, 1, 2", "module index 2^64 (became 0)"),
    ("finding4_group_2_64", plan(MOD, b"group 18446744073709551617 1 1\n"), "invalid", 6,
     "group ids must be 1, 2, 3", "group id 2^64 + 1 (became 1)"),
    ("finding4_select_group_2_64", plan(MOD, G1, select("select 18446744073709551616 0:0x10")), "invalid", 7,
     "no such group", "select group 2^64 (became 0)"),
    ("finding4_frame_module_2_64", plan(MOD, G1, select("select 1 18446744073709551616:0x10")), "invalid", 7,
     "no module 18446744073709551616", "frame module 2^64 (became 0)"),
    ("finding4_nul_in_field", plan(MOD, G1, b"select 1 0:0x10\x0020\n"), "invalid", 7,
     "control character 0x00", "a NUL inside a field (truncated it)"),
    ("finding4_nul_in_path", plan(b"module 0 - /work/prog\x00ignored\n"), "invalid", 5,
     "control character 0x00", "a NUL inside the module path"),
    ("finding4_groups_4094", plan(*(f"group {g} 1 1\n".encode() for g in range(1, 4095))), "invalid", 4098,
     "too many groups (the runtime takes at most 4093)", "one group past the pool ids"),
    ("finding4_crlf", plan(MOD, G1).replace(b"\n", b"\r\n"), "invalid", 1, "carriage return",
     "CRLF line ends (the Python reader accepted them)"),
    ("finding4_cr_before_end", plan(MOD, G1)[:-4] + b"end\r\n", "invalid", 7, "carriage return",
     "one CR at the end of 'end'"),
    ("finding4_build_id_odd", plan(b"module 0 9a1c0ef -\n"), "invalid", 5, "build-id is not lowercase hex",
     "an odd number of build-id digits (Python accepted)"),
    ("finding4_build_id_65_bytes", plan(b"module 0 " + b"ab" * 65 + b" /p\n"), "invalid", 5,
     "build-id is not lowercase hex of 1 to 64 bytes", "a build-id longer than the runtime keeps"),
    ("finding4_build_id_upper", plan(b"module 0 9A1C0EF3 /p\n"), "invalid", 5, "build-id is not lowercase hex",
     "upper-case build-id"),
    ("finding4_path_512_bytes", plan(b"module 0 - /" + b"p" * 511 + b"\n"), "invalid", 5,
     "path longer than 511 bytes", "a module path one byte past the runtime's (Python accepted)"),
    ("finding4_skip_name_128_bytes", plan(b"skip " + b"s" * 128 + b"\n"), "invalid", 5,
     "skip name longer than 127 bytes", "a skip name past the runtime's"),
    ("finding4_modules_65", plan(*(f"module {i} - /m{i}\n".encode() for i in range(65))), "invalid", 69,
     "too many modules", "65 modules"),
    ("finding4_skips_33", plan(*(f"skip lib{i}.so\n".encode() for i in range(33))), "invalid", 37,
     "too many skip records", "33 skip records"),
    ("finding4_frames_17", plan(MOD, G1, select("select 1" + " 0:0x10" * 17)), "invalid", 7,
     "select has 17 frames, the runtime takes at most 16", "17 frames"),
    # ---- the file as a whole ----
    ("empty", b"", "invalid", 0, "empty file, not a plan", "an empty file"),
    ("no_final_newline", plan()[:-1], "invalid", 0, "truncated (the last line has no newline)", "cut in a line"),
    ("no_end", HEAD, "invalid", 0, "truncated (no 'end' record)", "cut between lines"),
    ("not_utf8", plan(b"module 0 - /p\xff\n"), "invalid", 0, "not UTF-8 text (byte 85)", "a byte that is never UTF-8"),
    ("utf8_surrogate", plan(b"module 0 - /p\xed\xa0\x80\n"), "invalid", 0, "not UTF-8 text (byte 85)",
     "an encoded surrogate"),
    ("utf8_overlong", plan(b"module 0 - /p\xc0\xaf\n"), "invalid", 0, "not UTF-8 text (byte 85)",
     "an overlong encoding"),
    ("utf8_cut", plan(b"module 0 - /p\xe2\x82\n"), "invalid", 0, "not UTF-8 text (byte 85)",
     "a sequence cut short"),
    ("tab", plan(b"skip\tlibc.so.6\n"), "invalid", 5, "control character 0x09", "a tab between fields"),
    ("del", plan(b"skip libc\x7f.so.6\n"), "invalid", 5, "control character 0x7f", "DEL"),
    ("version_2", b"heaplayout-plan 2\nend\n", "invalid", 1, "plan version 2: this reader knows version 1",
     "another version"),
    ("not_a_plan", b"hlprof 1\nend\n", "invalid", 1, "not a plan", "another file"),
    ("comment_first", b"# a plan\n" + plan(), "invalid", 1, "not a plan", "a comment before the first line"),
    ("magic_again", plan(b"heaplayout-plan 1\n"), "invalid", 5, "record 'heaplayout-plan' out of order",
     "the first line repeated"),
    # ---- records ----
    ("unknown_record", plan(b"frobnicate 1\n"), "invalid", 5, "unknown record 'frobnicate'", "an unknown record"),
    ("out_of_order", plan(G1, MOD), "invalid", 6, "record 'module' out of order", "module after group"),
    ("missing_strategy", HEAD.replace(b"strategy halo\n", b"") + b"end\n", "invalid", 2,
     "record 'strategy' missing before 'chunk_size'", "a required record left out"),
    ("rest_twice", plan(b"rest allocator\nrest allocator\n"), "invalid", 6, "record 'rest' out of order",
     "an optional record twice"),
    ("text_after_end", plan() + b"select 1 0:0x10\n", "invalid", 6, "text after 'end'", "a record after end"),
    ("strategy_unknown", plan(head=HEAD.replace(b"halo", b"magic")), "invalid", 2,
     "strategy 'magic': expected one of halo, callsite, hds", "an unknown strategy"),
    ("strategy_two_fields", plan(head=HEAD.replace(b"halo", b"halo hds")), "invalid", 2,
     "strategy takes 1 field, got 2", "extra field"),
    ("chunk_size_not_pow2", plan(head=HEAD.replace(b"1048576", b"1000000")), "invalid", 3, "power of two",
     "chunk size not a power of two"),
    ("chunk_size_not_number", plan(head=HEAD.replace(b"1048576", b"1M")), "invalid", 3,
     "chunk_size: '1M' is not a number", "a size suffix"),
    ("chunk_size_bare_0x", plan(head=HEAD.replace(b"1048576", b"0x")), "invalid", 3,
     "chunk_size: '0x' is not a number", "0x without digits"),
    ("chunk_size_negative", plan(head=HEAD.replace(b"1048576", b"-1048576")), "invalid", 3, "is not a number",
     "a sign"),
    ("chunk_size_unicode_digits", plan(head=HEAD.replace(b"1048576", "１０４８５７６".encode())), "invalid", 3,
     "chunk_size: '(21 bytes)' is not a number", "full-width digits (Python's int() takes them)"),
    ("chunk_size_underscore", plan(head=HEAD.replace(b"1048576", b"1_048_576")), "invalid", 3,
     "is not a number", "digit separators (Python's int() takes them)"),
    ("max_object_size_big", plan(head=HEAD.replace(b"4096", b"65536")), "invalid", 4,
     "max_object_size 65536: must be 1..32768", "an object size past the pools'"),
    ("min_align_12", plan(b"min_align 12\n"), "invalid", 5, "min_align 12: must be 8 or 16", "min_align 12"),
    ("rest_pools", plan(b"rest pools\n"), "invalid", 5, "rest is 'allocator' or 'callsite MAX_SIZE'",
     "an unknown rest"),
    ("rest_callsite_0", plan(b"rest callsite 0\n"), "invalid", 5, "the size limit must be 1..32768",
     "rest callsite 0"),
    ("recursion_other", plan(b"recursion frames\n"), "invalid", 5, "recursion 'frames': expected function",
     "an unknown recursion"),
    ("module_short", plan(b"module 0 -\n"), "invalid", 5, "module needs index, build-id and path", "no path"),
    ("module_index_1", plan(b"module 1 - /p\n"), "invalid", 5, "module index 1: module indexes must be 0, 1, 2",
     "a gap in module indexes"),
    ("group_short", plan(b"group 1 3\n"), "invalid", 5, "group takes 3 fields", "no weight"),
    ("group_fourth", plan(b"group 1 3 5 tight\n"), "invalid", 5, "the fourth field may only be 'packed'",
     "an unknown group flag"),
    ("group_gap", plan(G1, b"group 3 1 1\n"), "invalid", 6, "group ids must be 1, 2, 3", "a gap in group ids"),
    ("group_weight_overflow", plan(b"group 1 1 18446744073709551616\n"), "invalid", 5,
     "group weight 18446744073709551616: out of range", "a weight past 2^64 - 1"),
    ("select_no_frame", plan(MOD, G1, select("select 1")), "invalid", 7,
     "select needs a group and at least one frame", "no frame"),
    ("select_no_group", plan(MOD, G1, select("select 2 0:0x10")), "invalid", 7, "select 2: no such group",
     "a group not declared"),
    ("select_no_module", plan(MOD, G1, select("select 1 1:0x10")), "invalid", 7, "no module 1",
     "a module not declared"),
    ("frame_no_colon", plan(MOD, G1, select("select 1 0x10")), "invalid", 7, "expected module:0xOFFSET",
     "a frame without its module"),
    ("frame_empty_offset", plan(MOD, G1, select("select 1 0:")), "invalid", 7, "expected module:0xOFFSET",
     "no offset"),
    ("frame_empty_module", plan(MOD, G1, select("select 1 :0x10")), "invalid", 7,
     "frame module: '(0 bytes)' is not a number", "no module index"),
    ("frame_bad_hex", plan(MOD, G1, select("select 1 0:0xzz")), "invalid", 7, "frame offset: '0xzz' is not hex",
     "not hex"),
    ("frame_two_colons", plan(MOD, G1, select("select 1 0:1:2")), "invalid", 7, "frame offset: '1:2' is not hex",
     "two colons"),
    ("chain_twice", plan(MOD, G1, select("select 1 0:0x10 0:0x20", "select 0 0:0x30", "select 0 0:0x10 0:0x20",
                                          "select 1 0:0x10 0:0x20")), "invalid", 9,
     "select chain given twice (first on line 7)", "the same chain three times"),
    ("chain_twice_other_form", plan(MOD, G1, select("select 1 0:0x10", "select 1 00:10")), "invalid", 8,
     "chain given twice (first on line 7)", "the same frame written two ways"),
    ("end_with_field", plan(MOD)[:-4] + b"end now\n", "invalid", 6, "end takes 0 fields, got 1", "end with a field"),
]


def main() -> None:
    for old in HERE.glob("*.plan"):
        old.unlink()
    lines = ["# Plan conformance cases: both readers must give each verdict (tests/test_plan_conformance.py).",
             "# Written by make_cases.py; line 0 means the file as a whole.", ""]
    names = set()
    for name, text, verdict, line, reason, what in CASES:
        assert name not in names, name
        names.add(name)
        (HERE / f"{name}.plan").write_bytes(text)
        lines += [f"[cases.{name}]", f"verdict = {json.dumps(verdict)}", f"line = {line}",
                  f"reason = {json.dumps(reason)}", f"covers = {json.dumps(what)}", ""]
    (HERE / "cases.toml").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
