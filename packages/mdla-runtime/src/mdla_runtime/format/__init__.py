"""The `.mdla` file format wing: container constants, the writer (lowering to Neuron operands),
the validating reader. Imports nothing above it (`engine`, `emu`, `export`)."""
