"""The ``edge-agent`` command: argument parsing and one function per subcommand (cli.main)."""
