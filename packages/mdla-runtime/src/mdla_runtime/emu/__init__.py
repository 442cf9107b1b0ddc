"""The emulator wing: `libneuron_emu.so`, the host implementation of the Neuron Adapter ABI."""
