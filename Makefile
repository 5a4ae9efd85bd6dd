# The two commands of the README: `make demo` and `make test`. Both install what is missing first.
.PHONY: setup demo test bench dist clean

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/mirrorspark demo

test: setup
	.venv/bin/pytest

# Real MirrorMaker 2 vs mirrorspark on the same local brokers (5-10 minutes on 2 cores).
bench: setup
	.venv/bin/python bench/mm2_vs_mirrorspark.py

# The wheel for `pip install` (mirrorspark's jar inside; see README "Install with pip").
dist: setup
	.venv/bin/python scripts/build_wheel.py dist

clean:
	-.venv/bin/mirrorspark local down --purge 2>/dev/null
	-.venv/bin/mirrorspark local spark down --purge 2>/dev/null
	rm -rf build state .venv dist
