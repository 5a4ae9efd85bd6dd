# The two commands of the README: `make demo` and `make test`. Both install what is missing first.
.PHONY: setup demo test clean

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/mirrorspark demo

test: setup
	.venv/bin/pytest

clean:
	-.venv/bin/mirrorspark local down --purge 2>/dev/null
	rm -rf build state .venv
