# Environment for Spark and Java, sourced by the Makefile recipes and .ci/run.
# Java 17 is normally preinstalled; install it from Debian when it is not.
if ! command -v java >/dev/null 2>&1; then
  echo "hoodie-lab: java not found; installing openjdk-17-jre-headless" >&2
  (apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends openjdk-17-jre-headless) >&2
fi
if [ -z "${JAVA_HOME:-}" ] && command -v java >/dev/null 2>&1; then
  JAVA_HOME="$(dirname "$(dirname "$(readlink -f "$(command -v java)")")")"
  export JAVA_HOME
fi
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export SPARK_CONF_DIR="${SPARK_CONF_DIR:-$PWD/conf}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-$PWD/.venv/bin/python}"
export PYSPARK_DRIVER_PYTHON="${PYSPARK_DRIVER_PYTHON:-$PWD/.venv/bin/python}"
