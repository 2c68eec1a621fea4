"""The side-by-side table of the `run` benchmarks: each way's median rate per case, and its
ratio to plain ``python`` measured in the same rounds."""

from __future__ import annotations

import statistics


def print_rates(rates: dict[str, dict[str, list[float]]], case_width: int, cell_width: int) -> None:
    """``rates[way][case]``: the rates of the rounds; the ``"python"`` way is the baseline."""
    base = rates["python"]
    print(f"{'case':<{case_width}}" + "".join(f"{way:>{cell_width}}" for way in rates))
    for case in base:
        cells = []
        for way, by_case in rates.items():
            median = statistics.median(by_case[case])
            ratio = median / statistics.median(base[case])
            number = f"{median:>{cell_width - 10},.0f}/s"
            cells.append(number + (f" {ratio:5.2f}x" if way != "python" else "      "))
        print(f"{case:<{case_width}}" + "".join(f"{c:>{cell_width}}" for c in cells), flush=True)
