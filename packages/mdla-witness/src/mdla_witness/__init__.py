"""mdla_witness: prove the NPU ran (stdlib only, importable on the phone without torch).

Planned (issue 6): `find_power_nodes(sysfs="/sys")` discovers the APU runtime-PM nodes and
`witness(run, idle_s=4.0)` runs the idle-control / run protocol and returns a verdict that can
say "witnessed", "not witnessed" or "cannot witness: <why>". Nothing is implemented yet.
"""
