"""What the tests and the benchmarks both stand on: the daemon's command line
(``serve_command``), a real Mosquitto on a random port (``mosquitto``) and a process's own
figures read from /proc (``processes``). Imported as ``scripts.testbed`` from the checkout's root
(pytest's ``pythonpath`` puts it there for the tests)."""
