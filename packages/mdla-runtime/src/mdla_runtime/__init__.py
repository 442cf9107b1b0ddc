"""mdla_runtime: the .mdla manifest, the C engine on the Neuron ABI and the host emulator (issue 5). Being built; nothing is exported yet."""
