"""`workbench devices`: the adapter library, its Neuron version and its devices."""

from __future__ import annotations

from typing import Annotated

import typer

from workbench.commands.options import Debug, On, console
from workbench.errors import reported
from workbench.output import dumps, open_target

EPILOG = """Examples:

  workbench devices

  workbench devices --on lib:/vendor/lib64/libneuron_adapter_mgvi.so
"""


def devices_command(
    on: On = "emu",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    debug: Debug = False,
) -> None:
    """Show which Neuron Adapter library the target loads, its version and its devices."""
    with reported(debug):
        target = open_target(on)  # an SSH phone: its connect on stderr
        info = target.info()
        if as_json:
            typer.echo(dumps({"target": target.name, **info}))
            return
        con = console()
        con.print(f"target:  {target.name}", markup=False)
        con.print(f"adapter: {info.get('adapter', target.lib)}", markup=False)
        con.print(f"neuron:  {info.get('version', 'unknown')}", markup=False)
        con.print(f"devices: {', '.join(str(d) for d in info['devices'])}", markup=False)
