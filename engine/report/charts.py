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
