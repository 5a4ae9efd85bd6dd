"""Subjects follow the remote topic's name under each naming strategy (ADR 0028)."""
from mirrorspark.schemas.subjects import target_subject

REMOTE = {"orders": "primary.orders", "orders-eu": "primary.orders-eu", "payments": "payments"}


def test_topic_name_strategy_subjects_take_the_remote_topics_name():
    assert target_subject("orders-value", REMOTE) == "primary.orders-value"
    assert target_subject("orders-key", REMOTE) == "primary.orders-key"
    assert target_subject("orders-eu-value", REMOTE) == "primary.orders-eu-value"  # not orders + "-eu-value"


def test_topic_record_name_subjects_keep_the_record_part():
    assert target_subject("orders-com.acme.Order", REMOTE) == "primary.orders-com.acme.Order"
    assert target_subject("orders-eu-com.acme.Order", REMOTE) == "primary.orders-eu-com.acme.Order"


def test_record_name_subjects_and_subjects_of_topics_not_copied_keep_their_name():
    assert target_subject("com.acme.Order", REMOTE) == "com.acme.Order"
    assert target_subject("common-address", REMOTE) == "common-address"
    assert target_subject("payments-value", REMOTE) == "payments-value"  # identity policy: same name
    assert target_subject("orders-not a record", REMOTE) == "orders-not a record"
