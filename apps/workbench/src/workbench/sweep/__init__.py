"""`workbench sweep`: a grid of quantization configurations, each compiled and scored on
held-out inputs as its own task (a local process pool), the rows in one SQLite table.

    grid.py     methods x techniques -> QuantConfigs
    bundle.py   the bytes a task reads (spec file, weights, calibration, held-out inputs)
    task.py     one task: compile, score, the row (or its error)
    score.py    agreement (Wilson intervals: stats.py), SQNR, emulated latency
    cost.py     the activation traffic and 16x8 MACs (the Pareto front's cost)
    table.py    the SQLite table
    pool.py     the local pool of processes (threads.py: each worker's share of the cores)
    driver.py   held-out inputs, jobs, skipping done rows, progress
    report.py   the rows printed and as JSON
"""
