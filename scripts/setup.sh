#!/usr/bin/env bash
# Idempotent, cached set-up: .venv with mirrorspark installed, Kafka and Spark-connector jars from
# Maven Central, and mirrorspark's own jars (the Maven modules of jvm/pom.xml). Each step is skipped
# when its inputs have not changed since it last ran (a stamp file records the hash of those inputs).
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
need mvn "Maven, to build mirrorspark's jar and resolve jars from Maven Central"

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
  # No pandas, pyarrow or numpy: pyspark imports them at its first py4j call when they are installed
  # (~60 MB of the driver process's RSS), and a user's `pip install` has none of them.
  .venv/bin/python -m pip uninstall -q -y pandas pyarrow numpy 2>/dev/null || true
  .venv/bin/python -m pip install -q -e ".[test]"
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
      -DincludeArtifactIds=spark-sql-kafka-0-10_2.13,spark-token-provider-kafka-0-10_2.13,kafka-clients,commons-pool2,connect-transforms,connect-api
}

schema_registry() {
  # Apicurio Registry (in-memory storage, Java 17) for `mirrorspark local up --schema-registry` and the
  # schema drills (ADR 0028); the artifact named in jvm/schema-registry.artifact, from Maven Central.
  # The plug-in's 2.8 copies the file alone; 3.x reads its parent POM first, which Maven Central here lacks.
  rm -rf "$BUILD/schema-registry" "$BUILD/schema-registry.download"
  mvn -B -q -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:2.8:copy \
      -Dartifact="$(tr -d '[:space:]' < jvm/schema-registry.artifact)" \
      -DoutputDirectory="$BUILD/schema-registry.download"
  mkdir -p "$BUILD/schema-registry"
  tar xzf "$BUILD"/schema-registry.download/*.tar.gz -C "$BUILD/schema-registry"
  rm -rf "$BUILD/schema-registry.download"
}

jvm_jar() {
  # mirrorspark's own JVM code as Maven modules (jvm/pom.xml), compiled with warnings fatal against the
  # Spark and Kafka client versions each runs with: mirrorspark.jar (Spark and the client JVM) and
  # mirrorspark-clients.jar (the client JVM only). Their unit tests run in `make test`, not here (not
  # even compiled). Compiled afresh each time, so that no class of a removed source stays in a jar.
  rm -rf "$BUILD/mirrorspark-jvm" "$BUILD/mirrorspark-clients" "$BUILD/mirrorspark-maven/classes" \
    "$BUILD/clients-maven/classes" && mkdir -p "$BUILD/mirrorspark-jvm" "$BUILD/mirrorspark-clients"
  mvn -B -q -Dstyle.color=never -f jvm/pom.xml -Dmaven.test.skip=true package
  cp "$BUILD/mirrorspark-maven/mirrorspark.jar" "$BUILD/mirrorspark-jvm/mirrorspark.jar"
  cp "$BUILD/clients-maven/mirrorspark-clients.jar" "$BUILD/mirrorspark-clients/mirrorspark-clients.jar"
}

apt_optional() {
  # apt_optional NAME WHAT PACKAGE...: install Debian packages a few tests need, when apt-get runs as root
  # (or through passwordless sudo); otherwise say which tests (WHAT) will be skipped, and go on.
  local name=$1 what=$2
  shift 2
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n); else sudo=(false); fi
  fi
  if ! command -v apt-get >/dev/null 2>&1 || [[ ${sudo[0]:-} == false ]]; then
    echo "setup: no $name and no way to install it (apt-get as root); $what will be skipped"
    return 0
  fi
  echo "setup: $name (apt-get) ..."
  local log=$BUILD/$name-apt.log
  local install=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@")
  if ! "${install[@]}" >"$log" 2>&1; then
    # An empty or stale package list: refresh it once and try again.
    "${sudo[@]}" apt-get update -q >>"$log" 2>&1 && "${install[@]}" >>"$log" 2>&1 ||
      { echo "setup: could not install $name (see $log); $what will be skipped"; return 0; }
  fi
  echo "setup: $name done"
}

browser() {
  # Headless Chromium for tests/unit/rest/test_api_docs.py, which renders /docs with no network.
  local b
  # A browser that answers --version (a snap stub in a container does not) counts as installed.
  for b in chromium chromium-browser google-chrome; do command -v "$b" >/dev/null 2>&1 && "$b" --version >/dev/null 2>&1 && return 0; done
  apt_optional chromium "the browser check of /docs" chromium fonts-liberation
}

prometheus_server() {
  # Prometheus and promtool (Debian's `prometheus` package) for the alert-rule and dashboard tests
  # (tests/unit/metrics/test_alert_rules.py, tests/integration/test_alerts_prometheus.py). The tests start
  # their own `prometheus` process (own config, data folder and free port), never the package's service.
  command -v promtool >/dev/null 2>&1 && command -v prometheus >/dev/null 2>&1 && return 0
  apt_optional prometheus "the alert-rule tests" prometheus
}

kerberos_kdc() {
  # An MIT KDC (Debian's krb5-kdc and krb5-admin-server: krb5kdc, kdb5_util, kadmin.local) for the local
  # GSSAPI clusters of the Kerberos drill (tests/integration/test_java_client_security.py). `mirrorspark
  # local up --sasl-mechanism GSSAPI` runs its own KDC process in the cluster's folder, never the
  # package's service.
  { command -v krb5kdc >/dev/null 2>&1 || [[ -x /usr/sbin/krb5kdc ]]; } && [[ -x /usr/sbin/kadmin.local ]] && return 0
  apt_optional krb5-kdc "the Kerberos drill" krb5-kdc krb5-admin-server
}

step venv pyproject.toml -- venv
browser
prometheus_server
kerberos_kdc
step kafka-libs jvm/kafka-libs.pom.xml -- kafka_libs
step spark-kafka-jars jvm/spark-kafka.pom.xml -- spark_kafka_jars
step schema-registry jvm/schema-registry.artifact -- schema_registry
step jvm-jar pyproject.toml jvm/spark-kafka.pom.xml jvm/kafka-libs.pom.xml jvm/pom.xml jvm/mirrorspark/pom.xml \
  jvm/clients/pom.xml jvm/.mvn/maven.config $(find jvm/mirrorspark/src/main jvm/clients/src/main -type f | sort) -- jvm_jar
