"""The package's layers: unit tests of each module, the import contracts, the endpoint mode."""
