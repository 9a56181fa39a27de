"""What calico-node's Felix writes to its log, for the builders and fakes that stand for it,
written from projectcalico/calico v3.31.2 (dd5575465ed8, the Calico gpulab pins) at the lines
cited beside each encoder. tests/kamaji_hami/test_calico_wire.py checks the line format against
upstream's own expected lines (tests/data/pinned/upstream/
calico_v3.31.2_libcalico-go_lib_logutils_logutils_test.go).
"""

from __future__ import annotations

from datetime import datetime

FELIX = "felix"  # felix/logutils/logutils.go:55: ConfigureFormatter("felix")
# felix/dataplane/linux/int_dataplane.go:483: the loop Felix summarises once a minute.
DATAPLANE_LOOPS = "dataplane reconciliation loops"
SUMMARY_FILE, SUMMARY_LINE = "summary.go", 100  # felix/logutils/summary.go:100


def log_line(when: datetime, level: str, pid: int, file: str, line: int, message: str,
             component: str = FELIX) -> str:
    """One entry without fields as Calico's Formatter writes it (libcalico-go/lib/logutils/
    logutils.go:108-182): the time as `2006-01-02 15:04:05.000` (AppendTime: RFC3339Nano cut
    to milliseconds, not rounded), ` [<LEVEL>][<pid>] `, `<component>/` when the formatter has
    one, the caller's file base name, ` <line>: `, the message, then a newline
    (appendKVsAndNewLine with no data)."""
    stamp = when.strftime("%Y-%m-%d %H:%M:%S.") + f"{when.microsecond // 1000:03d}"
    prefix = f"{component}/" if component else ""
    return f"{stamp} [{level.upper()}][{pid}] {prefix}{file} {line}: {message}\n"


def go_duration_ms(ms: int) -> str:
    """Go's time.Duration.String() of a whole number of milliseconds: `12ms` under a second,
    else `<h>h<m>m<s>s` with leading zero units left out and the seconds' fraction without
    trailing zeros (`1m0.1s`, `2s`)."""
    if ms < 1000:
        return f"{ms}ms" if ms else "0s"
    hours, rest = divmod(ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    seconds = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{seconds}"
    return f"{minutes}m{seconds}" if minutes else seconds


def loop_summary(loops: int, over_ms: int, avg_ms: int, longest_ms: int,
                 operations: list[str]) -> str:
    """Felix's once-a-minute summary of its dataplane loops (felix/logutils/summary.go:100-103:
    `"Summarising %d %s over %v: avg=%v longest=%v (%v)"`, the longest loop's operations
    sorted and joined by ","); operation names are those Felix records, e.g. `update-routes`
    (felix/dataplane/linux/route_mgr.go:348)."""
    return (f"Summarising {loops} {DATAPLANE_LOOPS} over {go_duration_ms(over_ms)}: "
            f"avg={go_duration_ms(avg_ms)} longest={go_duration_ms(longest_ms)} "
            f"({','.join(sorted(operations))})")
