#!/usr/bin/env bash
# Idempotent, cached set-up: .venv with mirrorspark installed, Kafka and Spark-connector jars from
# Maven Central, and mirrorspark's own jar (jvm/mirrorspark). Each step is skipped when its inputs have not
# changed since it last ran (a stamp file records the hash of those inputs).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=$ROOT/build
STAMPS=$BUILD/stamps
MVN_DEP_PLUGIN=org.apache.maven.plugins:maven-dependency-plugin:3.8.1
mkdir -p "$STAMPS"

need() { command -v "$1" >/dev/null 2>&1 || { echo "setup: '$1' is required but not on PATH ($2)" >&2; exit 1; }; }
need python3 "Python >= 3.11"
need java "Java 17+"
need javac "a JDK 17+, not only a JRE"
need mvn "Maven, to resolve jars from Maven Central"

# step NAME INPUT_FILES... -- COMMAND...: run COMMAND unless the inputs' hash matches the stamp.
step() {
  local name=$1; shift
  local inputs=()
  while [[ $1 != -- ]]; do inputs+=("$1"); shift; done; shift
  local hash; hash=$(cat "${inputs[@]}" | sha256sum | cut -d' ' -f1)
  if [[ -f $STAMPS/$name && $(cat "$STAMPS/$name") == "$hash" ]]; then
    echo "setup: $name up to date"
    return 0
  fi
  echo "setup: $name ..."
  local t0=$SECONDS
  "$@"
  echo "$hash" > "$STAMPS/$name"
  echo "setup: $name done in $((SECONDS - t0)) s"
}

venv() {
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade "pip>=24"
  .venv/bin/python -m pip install -q -e ".[test,bench]"
}

kafka_libs() {
  rm -rf "$BUILD/kafka-libs"
  mvn -B -q -Dstyle.color=never -f jvm/kafka-libs.pom.xml $MVN_DEP_PLUGIN:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$BUILD/kafka-libs"
}

spark_kafka_jars() {
  rm -rf "$BUILD/spark-kafka-jars"
  mvn -B -q -Dstyle.color=never -f jvm/spark-kafka.pom.xml $MVN_DEP_PLUGIN:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$BUILD/spark-kafka-jars" \
      -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2
}

jvm_jar() {
  # mirrorspark's own JVM code (sink, state files, interceptor), compiled against the installed
  # pyspark's jars and the connector's Kafka client.
  local out=$BUILD/jvm-classes
  rm -rf "$out" "$BUILD/mirrorspark-jvm" && mkdir -p "$out" "$BUILD/mirrorspark-jvm"
  local clients; clients=$(ls "$BUILD"/spark-kafka-jars/kafka-clients-*.jar)
  local spark; spark=$(.venv/bin/python -c 'import pyspark, os; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
  javac --release 17 -nowarn -cp "$clients:$spark/*" -d "$out" $(find jvm/mirrorspark/src -name '*.java')
  jar cf "$BUILD/mirrorspark-jvm/mirrorspark.jar" -C "$out" .
}

step venv pyproject.toml -- venv
step kafka-libs jvm/kafka-libs.pom.xml -- kafka_libs
step spark-kafka-jars jvm/spark-kafka.pom.xml -- spark_kafka_jars
step jvm-jar pyproject.toml jvm/spark-kafka.pom.xml $(find jvm/mirrorspark/src -name '*.java' | sort) -- jvm_jar
