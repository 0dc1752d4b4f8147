"""Small SVG charts for the report: a rate over time with its 95% intervals as error bars."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from engine.harness.trends import RatePoint

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 14, 36


def rate_chart(points: Sequence[RatePoint], title: str) -> str:
    """Pass rate per invocation (dots) with its Wilson interval (bars), oldest on the left."""
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
        f'height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(title)}">'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        y = TOP + plot_h * (1 - tick)
        parts.append(
            f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="axis" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{tick:.0%}</text>"
        )
    count = len(points)
    for index, point in enumerate(points):
        x = LEFT + plot_w * ((index + 0.5) / max(count, 1))
        rate = point.rate
        low, high = rate.interval
        y_low, y_high = TOP + plot_h * (1 - low), TOP + plot_h * (1 - high)
        label = f"{point.at[:16].replace('T', ' ')}: {rate.render()}"
        parts.append(f'<g class="point" data-k="{rate.k}" data-n="{rate.n}">')
        parts.append(f"<title>{escape(label)}</title>")
        parts.append(
            f'<line class="interval" x1="{x:.1f}" x2="{x:.1f}" y1="{y_low:.1f}" y2="{y_high:.1f}"/>'
        )
        if rate.value is not None:
            y = TOP + plot_h * (1 - rate.value)
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4"/>')
        parts.append("</g>")
        if count <= 12 or index in (0, count - 1):
            parts.append(
                f'<text class="axis" x="{x:.1f}" y="{HEIGHT - 12}" text-anchor="middle">'
                f"{escape(point.at[5:10])}</text>"
            )
    parts.append("</svg>")
    return "".join(parts)


BAR_W, BAR_H, BAR_PAD = 220, 30, 10


def interval_bar(
    interval: tuple[float, float] | None,
    value: float | None,
    threshold: float | None,
    domain: tuple[float, float],
    title: str,
) -> str:
    """One judge's 95% interval as a band on the `domain` scale, its point estimate as a dot
    and its gate as a dashed line: at a glance, whether the band clears the gate."""
    lo, hi = domain
    span = (hi - lo) or 1.0

    def x(v: float) -> float:
        return BAR_PAD + (BAR_W - 2 * BAR_PAD) * (min(max(v, lo), hi) - lo) / span

    low, high = interval if interval is not None else (None, None)
    marks = {"low": low, "high": high, "value": value, "threshold": threshold}
    data = "".join(f' data-{k}="{v!r}"' for k, v in marks.items() if v is not None)
    parts = [
        f'<svg class="bar" xmlns="http://www.w3.org/2000/svg" width="{BAR_W}" height="{BAR_H}" '
        f'viewBox="0 0 {BAR_W} {BAR_H}" role="img" aria-label="{escape(title)}"{data}>',
        f"<title>{escape(title)}</title>",
        f'<line class="axis" x1="{BAR_PAD}" x2="{BAR_W - BAR_PAD}" y1="13" y2="13"/>',
        f'<text x="{BAR_PAD}" y="29">{lo:g}</text>'
        f'<text x="{BAR_W - BAR_PAD}" y="29" text-anchor="end">{hi:g}</text>',
    ]
    if low is not None and high is not None:
        left, right = x(low), x(high)
        parts.append(
            f'<rect class="range" x="{left:.1f}" y="7" width="{max(right - left, 1.5):.1f}" '
            'height="12"/>'
        )
    if value is not None:
        parts.append(f'<circle cx="{x(value):.1f}" cy="13" r="3.5"/>')
    if threshold is not None:
        tx = x(threshold)
        parts.append(f'<line class="threshold" x1="{tx:.1f}" x2="{tx:.1f}" y1="2" y2="22"/>')
    parts.append("</svg>")
    return "".join(parts)
