# The two commands of the README: `make demo` and `make test`. Both install what is missing first.
.PHONY: setup demo lint test test-unit drills soak bench bench-schemas bench-partitions bench-faults bench-realtime dist image image-test clean

setup:
	@bash scripts/setup.sh

demo: setup
	.venv/bin/mirrorspark demo

# ruff and mypy, as configured in pyproject.toml.
lint: setup
	.venv/bin/ruff check src tests scripts bench
	.venv/bin/mypy
	.venv/bin/python scripts/import_cycles.py
	.venv/bin/python scripts/import_cycles.py --packages

# The JVM code's unit tests (JUnit 5, jvm/*/src/test): no broker, no Spark running.
JVM_TESTS = mvn -B -q -Dstyle.color=never -f jvm/pom.xml test

# Lint, the JVM unit tests, then every Python test (unit and against real local brokers and Spark)
# but the long drills (`make drills`), two at a time (each pytest worker starts its own session
# clusters; three at a time loaded the two cores so that drills timed out and took longer overall);
# the 15 slowest are listed at the end.
test: lint
	$(JVM_TESTS)
	.venv/bin/pytest -n 2 --dist worksteal -m "not long and not image" --durations=15

# The long fault drills (marker `long`: outages of minutes, backlogs, kill -9 at each moment of a
# transaction, writers stopped and fenced, cutovers killed at each step); CI runs them after make test.
# The randomized fault soak (marker `soak`) runs only in `make soak`.
drills: setup
	.venv/bin/pytest -n 2 --dist worksteal -m "long and not image and not soak" --durations=15

# The unit tests only (the JVM's, then tests/unit): no broker, no Spark, no network; under a minute.
test-unit: setup
	$(JVM_TESTS)
	.venv/bin/pytest tests/unit

# The container image (deploy/Containerfile) with buildah: the wheel, a Debian 12 base from debootstrap unless
# BASE names one, then the image (IMAGE, default localhost/mirrorspark:latest). image-test builds it and runs it
# against two local clusters (about 15 minutes the first time: it downloads Debian, a JRE and pyspark).
image: setup
	bash scripts/build_image.sh

image-test: setup
	.venv/bin/pytest -s -m image tests/image

# The randomized fault soak: SOAK_MINUTES (default 60; `SOAK_MINUTES=2` for a quick look) and
# SOAK_SEED (default random) are printed with the fault schedule; the report goes to build/soak-report.txt.
SOAK_MINUTES ?= 60
SOAK_SEED ?= $(shell date +%s)
soak: setup
	MIRRORSPARK_SOAK_MINUTES=$(SOAK_MINUTES) MIRRORSPARK_SOAK_SEED=$(SOAK_SEED) \
	MIRRORSPARK_SOAK_REPORT=build/soak-report.txt .venv/bin/pytest -s -p no:cacheprovider tests/soak

# Real MirrorMaker 2 vs mirrorspark on the same local brokers and the schema bench below (about 40 minutes on 2 cores).
bench: setup
	.venv/bin/python bench/mm2_vs_mirrorspark.py
	.venv/bin/python bench/schema_rewrite.py
	.venv/bin/python bench/render_readme.py

# Avro records between two schema registries whose ids collide: MM2's copy and mirrorspark's with and
# without id rewriting, each read back with the target's registry (about 10 minutes; part of `make bench`).
bench-schemas: setup
	.venv/bin/python bench/schema_rewrite.py
	.venv/bin/python bench/render_readme.py

# The same real faults (kill -9, the source cluster down, unread records deleted) against real MM2 and
# mirrorspark, records lost and copied twice against what each reported (about 15 minutes).
bench-faults: setup
	.venv/bin/python bench/fault_drills.py
	.venv/bin/python bench/render_readme.py

# Many quiet partitions (60, 600, 3,000) vs real MM2: full sync, idle CPU, latency, memory (about 25 minutes).
bench-partitions: setup
	.venv/bin/python bench/partition_scale.py
	.venv/bin/python bench/render_readme.py

# Real-time mode's latency p50/p99 per real-time batch duration (5, 15, 30, 60 s; about 15 minutes).
bench-realtime: setup
	.venv/bin/python bench/realtime_batches.py

# The wheel for `pip install` (mirrorspark's jar inside; see README "Install with pip").
dist: setup
	.venv/bin/python scripts/build_wheel.py dist

clean:
	-.venv/bin/mirrorspark local down --purge 2>/dev/null
	-.venv/bin/mirrorspark local spark down --purge 2>/dev/null
	rm -rf build state .venv dist
