"""One module per `heaplayout` subcommand."""
