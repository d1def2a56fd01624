"""The ``allure`` command line: one module per command, each a thin wrapper over a library function."""
