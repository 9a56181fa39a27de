"""calico_wire writes a log line as Calico v3.31.2's own formatter test expects it."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from tests.kamaji_hami import calico_wire as cw

UPSTREAM = (Path(__file__).resolve().parents[1] / "data" / "pinned" / "upstream" /
            "calico_v3.31.2_libcalico-go_lib_logutils_logutils_test.go")


def _basic_entry() -> tuple[str, str, int, str, str]:
    """The "Basic" case of upstream's Formatter table: (time, caller file, line, message,
    expected log line with <PID>)."""
    text = UPSTREAM.read_text(encoding="utf-8")
    when = re.search(r'time\.Parse\("2006-01-02 15:04:05\.000", "([^"]+)"\)', text)
    case = re.search(r'Entry\("Basic",.*?File: "([^"]+)",\s*Line: (\d+),.*?'
                     r'Message: "([^"]+)",\s*},\s*"((?:[^"\\]|\\.)*)"', text, re.S)
    assert when and case
    expected = case.group(4).encode().decode("unicode_escape")
    return when.group(1), case.group(1), int(case.group(2)), case.group(3), expected


def test_a_line_is_what_calicos_formatter_test_expects() -> None:
    stamp, file, line, message, expected = _basic_entry()
    when = datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S.%f")
    # upstream's case: a Formatter without component, the caller's path cut to its base name
    said = cw.log_line(when, "info", 4242, Path(file).name, line, message, component="")
    assert said == expected.replace("<PID>", "4242")
    assert said == "2017-03-15 11:22:33.123 [INFO][4242] foo.go 123: The answer is 42.\n"


def test_felix_prefixes_its_component_and_cuts_the_time_to_milliseconds() -> None:
    when = datetime(2026, 11, 20, 10, 16, 0, 999999)
    said = cw.log_line(when, "info", 57, cw.SUMMARY_FILE, cw.SUMMARY_LINE, "x")
    assert said == "2026-11-20 10:16:00.999 [INFO][57] felix/summary.go 100: x\n"


def test_the_loop_summary_reads_like_felixs() -> None:
    assert cw.loop_summary(14, 60_100, 3, 12, ["update-routes", "first-update"]) == (
        "Summarising 14 dataplane reconciliation loops over 1m0.1s: avg=3ms longest=12ms "
        "(first-update,update-routes)")
    assert [cw.go_duration_ms(ms) for ms in (0, 7, 1_500, 60_000, 3_723_400)] == [
        "0s", "7ms", "1.5s", "1m0s", "1h2m3.4s"]
