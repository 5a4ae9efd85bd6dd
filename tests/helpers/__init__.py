"""Helpers that test modules share (tests/ is on pytest's pythonpath, so they import as ``helpers.<module>``);
fixtures stay in conftest.py. A test module imports from here, never from another test module."""
