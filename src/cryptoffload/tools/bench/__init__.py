"""The benchmark: software and engine rows side by side, size sweeps, CPU accounting, reports."""
