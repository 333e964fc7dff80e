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
    ("group_spans", plan(MOD, b"group 1 3 5 spans\ngroup 2 1 1 packed spans\ngroup 3 1 1\n",
                         select("select 3 0:0x10")), "valid", 0, "", "the group flags spans, and packed spans"),
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
    ("group_fourth", plan(b"group 1 3 5 tight\n"), "invalid", 5,
     "after the weight only 'packed' and then 'spans' may follow", "an unknown group flag"),
    ("group_flags_reversed", plan(b"group 1 3 5 spans packed\n"), "invalid", 5,
     "after the weight only 'packed' and then 'spans' may follow", "group flags out of order"),
    ("group_spans_twice", plan(b"group 1 3 5 spans spans\n"), "invalid", 5,
     "after the weight only 'packed' and then 'spans' may follow", "a group flag twice"),
    ("group_six_fields", plan(b"group 1 3 5 packed spans spans\n"), "invalid", 5,
     "group takes 3 fields (and the optional flags 'packed' and 'spans'), got 6", "too many group fields"),
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


# ---- PreFix records (issue 22): line 6 is the first record after HEAD and MOD ----
def pf(*lines: str) -> bytes:
    return plan(MOD, select(*lines))


REGION = "prefix_region 4096 16"
C1 = "prefix_counter 1 all 2"
S1 = "prefix_site 1 1"
PS = "prefix_select 1 0:0x10"
SLOTS = ("prefix_slot 1 0 1 0 64", "prefix_slot 1 1 1 64 64")

CASES += [
    ("prefix_minimal", pf(REGION, C1, S1, PS, *SLOTS), "valid", 0, "", "a region, one counter, site, rule, two slots"),
    ("prefix_region_only", pf(REGION), "valid", 0, "", "a region without slots"),
    ("prefix_every_kind", b"heaplayout-plan 1\nstrategy prefix:hds+hot\nchunk_size 1048576\nmax_object_size 4096\n"
     + MOD + G1 + select("select 1 0:0x20", "prefix_region 1048576 16", "prefix_counter 1 all 1",
                         "prefix_counter 2 regular 5 16 3 0 1 2", "prefix_counter 3 fixed 3 7-9 0x20",
                         "prefix_counter 4 recycle 2", "prefix_site 1 1", "prefix_site 2 2", "prefix_site 3 3",
                         "prefix_site 4 3", "prefix_site 5 4", "prefix_select 1 0:0x10", "prefix_select 2 0:0x30",
                         "prefix_select 0 0:0x30 0:0x40", "prefix_select 3 0:0x50 0:0x60", "prefix_select 4 0:0x50",
                         "prefix_select 5 0:0x70", "prefix_slot 1 0 1 800000 16",
                         *[f"prefix_slot 2 {v} 2 {32 * i} 32" for i, v in enumerate([0, 1, 2, 5, 21, 37])],
                         "prefix_slot 3 3 3 4096 16", "prefix_slot 3 7 4 4112 16", "prefix_slot 3 8 3 4128 16",
                         "prefix_slot 3 9 3 4144 16", "prefix_slot 3 32 4 1048560 16", "prefix_slot 4 0 5 8192 48",
                         "prefix_slot 4 1 5 8240 48") + b"end\n",
     "valid", 0, "", "all, regular with extras, fixed ranges, recycle, two sites on a counter, site 0, with groups"),
    ("prefix_strategy_unknown", plan(head=HEAD.replace(b"halo", b"prefix:cold")), "invalid", 2,
     "strategy 'prefix:cold': expected one of halo, callsite, hds, prefix:hot, prefix:hds, prefix:hds+hot",
     "an unknown prefix variant"),
    # prefix_region
    ("prefix_region_largest", pf("prefix_region 1073741824 4096"), "valid", 0, "", "a region of 2^30 bytes, align 4096"),
    ("prefix_region_too_big", pf("prefix_region 1073741825 16"), "invalid", 6,
     "prefix_region bytes 1073741825: must be 1..1073741824", "a region past 2^30"),
    ("prefix_region_align_8", pf("prefix_region 4096 8"), "invalid", 6,
     "prefix_region align 8: must be a power of two from 16 to 4096", "alignment below 16"),
    ("prefix_region_align_48", pf("prefix_region 4096 48"), "invalid", 6,
     "prefix_region align 48: must be a power of two from 16 to 4096", "alignment not a power of two"),
    ("prefix_region_arity", pf("prefix_region 4096"), "invalid", 6, "prefix_region takes 2 fields, got 1",
     "a region without its alignment"),
    ("prefix_region_twice", pf(REGION, REGION), "invalid", 7, "record 'prefix_region' out of order",
     "two regions"),
    ("prefix_region_missing", pf(C1), "invalid", 6, "record 'prefix_region' missing before 'prefix_counter'",
     "a counter without a region"),
    ("prefix_after_end_order", pf(REGION, C1, "select 1 0:0x10"), "invalid", 8, "record 'select' out of order",
     "a select after the PreFix records"),
    # prefix_counter
    ("prefix_counter_gap", pf(REGION, "prefix_counter 2 all 1"), "invalid", 7,
     "prefix_counter id 2: prefix_counter ids must be 1, 2, 3, ... in order", "counter ids not dense"),
    ("prefix_counter_no_kind", pf(REGION, "prefix_counter 1"), "invalid", 7, "prefix_counter needs an id and a kind",
     "a counter without its kind"),
    ("prefix_counter_kind", pf(REGION, "prefix_counter 1 some 3"), "invalid", 7,
     "prefix_counter kind 'some': expected all, regular, fixed or recycle", "an unknown kind"),
    ("prefix_counter_all_0", pf(REGION, "prefix_counter 1 all 0"), "invalid", 7,
     "prefix_counter all 0: must be 1..4294967295", "all with no value"),
    ("prefix_counter_all_2_32", pf(REGION, "prefix_counter 1 all 4294967296"), "invalid", 7,
     "prefix_counter all 4294967296: must be 1..4294967295", "all past 32-bit values"),
    ("prefix_counter_all_arity", pf(REGION, "prefix_counter 1 all 1 2"), "invalid", 7,
     "prefix_counter all takes a count", "all with two counts"),
    ("prefix_counter_recycle_big", pf(REGION, "prefix_counter 1 recycle 16777217"), "invalid", 7,
     "prefix_counter recycle 16777217: must be 1..16777216", "recycle past 2^24 slots"),
    ("prefix_counter_regular_short", pf(REGION, "prefix_counter 1 regular 5 16"), "invalid", 7,
     "prefix_counter regular takes START STRIDE COUNT and at most 8 extra values", "regular without its count"),
    ("prefix_counter_regular_9_extras", pf(REGION, "prefix_counter 1 regular 100 1 1 " + " ".join(map(str, range(9)))),
     "invalid", 7, "at most 8 extra values", "nine extra values"),
    ("prefix_counter_stride_0", pf(REGION, "prefix_counter 1 regular 5 0 3"), "invalid", 7,
     "prefix_counter stride 0: must be 1..4294967295", "a stride of 0"),
    ("prefix_counter_regular_wraps", pf(REGION, "prefix_counter 1 regular 4294967290 4 3"), "invalid", 7,
     "prefix_counter regular: the progression passes 4294967295", "a progression past 2^32 - 1"),
    ("prefix_counter_extra_order", pf(REGION, "prefix_counter 1 regular 5 16 3 2 1"), "invalid", 7,
     "prefix_counter extra 1: extra values must be ascending", "extras not ascending"),
    ("prefix_counter_extra_in_progression", pf(REGION, "prefix_counter 1 regular 5 16 3 21"), "invalid", 7,
     "prefix_counter extra 21: already in the progression", "an extra value the progression has"),
    ("prefix_counter_fixed_empty", pf(REGION, "prefix_counter 1 fixed"), "invalid", 7,
     "prefix_counter fixed needs at least one range", "fixed without a range"),
    ("prefix_counter_fixed_bad", pf(REGION, "prefix_counter 1 fixed 3-"), "invalid", 7,
     "prefix_counter range: '3-' is not a number or A-B", "a range without its end"),
    ("prefix_counter_fixed_reversed", pf(REGION, "prefix_counter 1 fixed 9-7"), "invalid", 7,
     "prefix_counter range 9-7: must be A-B with A <= B", "a reversed range"),
    ("prefix_counter_fixed_overlap", pf(REGION, "prefix_counter 1 fixed 1-5 5"), "invalid", 7,
     "prefix_counter range 5: ranges must be ascending and disjoint", "overlapping ranges"),
    ("prefix_counter_fixed_big", pf(REGION, "prefix_counter 1 fixed 4294967296"), "invalid", 7,
     "prefix_counter range 4294967296: values must be 0..4294967295", "a value past 2^32 - 1"),
    ("prefix_counters_4097", pf(REGION, *(f"prefix_counter {i} all 1" for i in range(1, 4098))), "invalid", 4103,
     "too many prefix counters (the runtime takes at most 4096)", "4097 counters"),
    ("prefix_counters_4096", pf(REGION.replace("4096 16", "65536 16"), *(f"prefix_counter {i} all 1" for i in range(1, 4097)),
                                *(f"prefix_site {i} {i}" for i in range(1, 4097)),
                                *(f"prefix_slot {i} 0 {i} {16 * (i - 1)} 16" for i in range(1, 4097))),
     "valid", 0, "", "4096 counters, sites and slots"),
    # prefix_site
    ("prefix_site_no_counter", pf(REGION, C1, "prefix_site 1 2"), "invalid", 8,
     "prefix_site counter 2: no such counter (counters are 1..1)", "a site on an undeclared counter"),
    ("prefix_site_gap", pf(REGION, C1, "prefix_site 2 1"), "invalid", 8,
     "prefix_site id 2: prefix_site ids must be 1, 2, 3, ... in order", "site ids not dense"),
    # prefix_select
    ("prefix_select_no_site", pf(REGION, C1, S1, "prefix_select 2 0:0x10"), "invalid", 9,
     "prefix_select 2: no such site (sites are 1..1, 0 = no site)", "a rule for an undeclared site"),
    ("prefix_select_no_frame", pf(REGION, C1, S1, "prefix_select 1"), "invalid", 9,
     "prefix_select needs a site and at least one frame", "a rule without frames"),
    ("prefix_select_no_module", pf(REGION, C1, S1, "prefix_select 1 1:0x10"), "invalid", 9,
     "prefix_select frame 1:0x10: no module 1", "a frame in an undeclared module"),
    ("prefix_select_twice", pf(REGION, C1, S1, PS, "prefix_select 0 0x0:0x10", *SLOTS), "invalid", 10,
     "prefix_select chain given twice (first on line 9)", "the same chain for two sites"),
    ("prefix_select_same_as_select", plan(MOD, G1, select("select 1 0:0x10", REGION, C1, S1, PS, *SLOTS)), "valid", 0, "",
     "a select and a prefix_select of one chain (a group and a site)"),
    # prefix_slot
    ("prefix_slot_no_counter", pf(REGION, C1, S1, "prefix_slot 2 0 1 0 64"), "invalid", 9,
     "prefix_slot counter 2: no such counter (counters are 1..1)", "a slot of an undeclared counter"),
    ("prefix_slot_no_site", pf(REGION, C1, S1, "prefix_slot 1 0 2 0 64"), "invalid", 9,
     "prefix_slot site 2: no such site (sites are 1..1)", "a slot for an undeclared site"),
    ("prefix_slot_outside", pf(REGION, C1, S1, "prefix_slot 1 0 1 4096 16"), "invalid", 9,
     "prefix_slot offset 4096: outside the region (4096 bytes)", "a slot starting past the region"),
    ("prefix_slot_size_0", pf(REGION, C1, S1, "prefix_slot 1 0 1 0 0"), "invalid", 9,
     "prefix_slot size 0: must be 1..4096 (the region's bytes)", "an empty slot"),
    ("prefix_slot_unaligned", pf(REGION, C1, S1, "prefix_slot 1 0 1 8 16"), "invalid", 9,
     "prefix_slot offset 8 size 16: not multiples of the region's alignment 16", "an 8-aligned slot"),
    ("prefix_slot_past_end", pf(REGION, C1, S1, "prefix_slot 1 0 1 4080 32"), "invalid", 9,
     "prefix_slot offset 4080 size 32: past the region's end (4096 bytes)", "a slot running past the region"),
    ("prefix_slot_other_counter", pf(REGION, C1, "prefix_counter 2 all 1", S1, "prefix_site 2 2",
                                     "prefix_slot 1 0 2 0 64"), "invalid", 11,
     "prefix_slot: site 2 counts on counter 2, not 1", "a slot for another counter's site"),
    ("prefix_slot_unsorted", pf(REGION, C1, "prefix_counter 2 all 1", S1, "prefix_site 2 2",
                                *SLOTS, "prefix_slot 2 0 2 128 16", "prefix_slot 1 1 1 64 64"), "invalid", 14,
     "prefix_slot records must be sorted by counter and value (counter 1 after 2)", "counters out of order"),
    ("prefix_slot_value_skipped", pf(REGION, C1, S1, "prefix_slot 1 1 1 0 64"), "invalid", 9,
     "prefix_slot 1 1: expected value 0 (counter 1's values, in ascending order)", "a value skipped"),
    ("prefix_slot_not_in_pattern", pf(REGION, "prefix_counter 1 regular 5 16 2", S1, "prefix_slot 1 5 1 0 16",
                                      "prefix_slot 1 6 1 16 16"), "invalid", 10,
     "prefix_slot 1 6: expected value 21", "a value the pattern does not have"),
    ("prefix_slot_too_many", pf(REGION, C1, S1, *SLOTS, "prefix_slot 1 2 1 128 64"), "invalid", 11,
     "prefix_slot 1 2: counter 1 has only 2 values", "more slots than values"),
    ("prefix_slot_incomplete", pf(REGION, C1, "prefix_counter 2 all 1", S1, "prefix_site 2 2",
                                  SLOTS[0], "prefix_slot 2 0 2 128 16"), "invalid", 12,
     "counter 1 has no slot for its value 1", "a counter missing a value before the next counter"),
    ("prefix_slot_incomplete_at_end", pf(REGION, C1, S1, SLOTS[0]), "invalid", 10,
     "counter 1 has no slot for its value 1", "a counter missing a value at end"),
    ("prefix_slot_counter_without_slots", pf(REGION, C1, "prefix_counter 2 recycle 3", S1, *SLOTS), "invalid", 12,
     "counter 2 has no slot for its value 0", "a counter with no slot at all"),
    ("prefix_slot_overlap", pf(REGION, C1, S1, "prefix_slot 1 0 1 0 64", "prefix_slot 1 1 1 48 16"), "invalid", 10,
     "prefix_slot overlaps the slot on line 9", "two slots overlapping"),
    ("prefix_slot_inside_other", pf(REGION, "prefix_counter 1 all 3", S1, "prefix_slot 1 0 1 0 256",
                                    "prefix_slot 1 1 1 512 16", "prefix_slot 1 2 1 128 16"), "invalid", 11,
     "prefix_slot overlaps the slot on line 9", "a slot inside a larger one"),
    ("prefix_recycle_slots", pf(REGION, "prefix_counter 1 recycle 2", S1, "prefix_slot 1 0 1 0 16",
                                "prefix_slot 1 1 1 16 16"), "valid", 0, "", "a recycled counter's slot numbers"),
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
