"""The pygls language server: protocol glue over `server.index` and `server.features`."""
