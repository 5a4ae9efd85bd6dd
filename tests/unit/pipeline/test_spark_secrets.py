"""Secret ``spark.*`` settings skip pyspark's launcher command line; a local cluster's secret reaches the conf."""
from __future__ import annotations

from mirrorspark.pipeline import spark_session
from mirrorspark.pipeline.spark_session import spark_conf, split_secrets


def test_secret_settings_are_kept_off_the_launcher_and_launcher_settings_on_it():
    conf = {"spark.master": "spark://h:7077", "spark.driver.memory": "2g", "spark.jars": "/a.jar",
            "spark.driver.extraJavaOptions": "-XX:+UseParallelGC", "spark.authenticate": "true",
            "spark.hadoop.fs.s3a.secret.key": "s", "spark.hadoop.fs.s3a.access.key": "a",
            "spark.authenticate.secret": "x", "spark.ssl.keyStorePassword": "p",
            "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net": "k"}
    launcher, secret = split_secrets(conf)
    assert set(secret) == {"spark.hadoop.fs.s3a.secret.key", "spark.hadoop.fs.s3a.access.key",
                           "spark.authenticate.secret", "spark.ssl.keyStorePassword",
                           "spark.hadoop.fs.azure.account.key.acct.dfs.core.windows.net"}
    assert launcher == {k: v for k, v in conf.items() if k not in secret}


def test_a_local_clusters_secret_comes_before_the_users_settings(monkeypatch):
    asked = []

    def auth(master: str) -> dict[str, str]:
        asked.append(master)
        return {"spark.authenticate": "true", "spark.authenticate.secret": "local"}

    monkeypatch.setattr(spark_session, "driver_auth", auth)
    assert spark_conf({"spark.master": "spark://127.0.0.1:1"})["spark.authenticate.secret"] == "local"
    user = spark_conf({"spark.master": "spark://127.0.0.1:1", "spark.authenticate.secret": "mine"})
    assert user["spark.authenticate.secret"] == "mine"
    spark_conf({})
    assert asked == ["spark://127.0.0.1:1", "spark://127.0.0.1:1", "local[*]"]
