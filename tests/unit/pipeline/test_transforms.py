"""MM2's transforms as the file gives them: checked when it is read, handed to the sink as one option."""
from __future__ import annotations

import zipfile

import pytest

from mirrorspark.config import parse_config
from mirrorspark.config.properties_file import parse_properties
from mirrorspark.errors import ConfigError
from mirrorspark.pipeline.preflight import preflight
from mirrorspark.pipeline.query_options import sink_options
from mirrorspark.pipeline.transforms import transform_jars

BASE = ("clusters = A, B\nA.bootstrap.servers = a:1\nB.bootstrap.servers = b:1\nA->B.enabled = true\n")
FILTER = ("transforms = dropMarked\ntransforms.dropMarked.type = org.apache.kafka.connect.transforms.Filter\n"
          "transforms.dropMarked.predicate = marked\npredicates = marked\n"
          "predicates.marked.type = org.apache.kafka.connect.transforms.predicates.HasHeaderKey\n"
          "predicates.marked.name = drop-me\n")


def load(text: str):
    return parse_config(parse_properties(BASE + text))


def test_the_chain_reaches_the_sink_as_one_option_with_flow_keys_over_top_level():
    mirror = load(FILTER + "A->B.predicates.marked.name = other\n")
    preflight(mirror)
    option = sink_options(mirror.enabled_flows[0], report_offsets=True)["transforms"]
    lines = dict(line.split("\t") for line in option.splitlines())
    assert lines["transforms"] == "dropMarked" and lines["predicates.marked.name"] == "other"
    assert "transforms" not in sink_options(load("").enabled_flows[0], report_offsets=True)


@pytest.mark.parametrize(("text", "key", "words"), [
    ("transforms = x\n", "transforms.x.type", "is required"),
    ("transforms = r\ntransforms.r.type = org.apache.kafka.connect.transforms.RegexRouter\n",
     "transforms.r.type", "moves records to other topics"),
    ("transforms = x\ntransforms.x.type = com.example.Custom\n", "transforms.x.type", "no jar of plugin.path"),
    ("transforms = x\ntransforms.x.type = org.apache.kafka.connect.transforms.Filter\n"
     "transforms.x.predicate = p\n", "transforms.x.predicate", "which predicates does not list"),
    ("A->B.transforms = x\nA->B.transforms.x.type = org.apache.kafka.connect.transforms.Filter\n"
     "A->B.transforms.x.predicate = p\n", "A->B.transforms.x.predicate", "which predicates does not list"),
])
def test_a_chain_that_cannot_be_made_is_refused_naming_the_key(text, key, words):
    with pytest.raises(ConfigError) as caught:
        preflight(load(text))
    assert caught.value.key == key and words in str(caught.value)


def test_a_custom_class_is_found_in_plugin_path_and_its_jar_goes_to_spark(tmp_path):
    jar = tmp_path / "plugins" / "smt.jar"
    jar.parent.mkdir()
    with zipfile.ZipFile(jar, "w") as out:
        out.writestr("com/example/Custom.class", b"\xca\xfe\xba\xbe")
    mirror = load(f"plugin.path = {jar.parent}\ntransforms = x\ntransforms.x.type = com.example.Custom\n")
    preflight(mirror)
    assert transform_jars(mirror.enabled_flows) == [jar]


def test_transform_keys_that_do_nothing_and_whole_record_converters_are_said():
    mirror = load("A->B.transforms.mask.type = org.apache.kafka.connect.transforms.MaskField$Value\n"
                  "value.converter = org.apache.kafka.connect.storage.StringConverter\n"
                  "key.converter = org.apache.kafka.connect.converters.ByteArrayConverter\n")
    assert "A->B.transforms.mask.type: 'mask' is not listed in transforms: no effect (as in MM2)" in mirror.warnings
    assert any(w.startswith("value.converter = org.apache.kafka.connect.storage.StringConverter: mirrorspark "
                            "copies each record's bytes unchanged") for w in mirror.warnings)
    assert not any(w.startswith("key.converter") for w in mirror.warnings)
