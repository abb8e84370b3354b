"""The unsupported-ops answer names the real cause: tf2onnx's own unconverted ops, and for a
function call it could not look through, the ops inside that have no conversion — never the
call op itself as if it were the problem. (The conversion side runs in the slow tests.)"""
from converters.model.onnx import unsupported_message


def test_real_ops_are_named_with_counts_and_the_string_hint():
    text, ops = unsupported_message({"StringSplitV2": 2, "StaticRegexReplace": 1}, {})
    assert text.startswith("ONNX has no equivalent for these TensorFlow ops: "
                           "StaticRegexReplace (x1), StringSplitV2 (x2)")
    assert "feed token ids" in text and ops == ["StaticRegexReplace", "StringSplitV2"]


def test_a_call_is_explained_by_the_ops_inside_it():
    text, ops = unsupported_message({"PartitionedCall": 3},
                                    {"__inference_block_1": ["Bucketize"],
                                     "__inference_block_2": ["Bucketize", "Log1p"]})
    assert "PartitionedCall" not in ops and ops == ["Bucketize", "Log1p"]
    assert "inside called functions (__inference_block_1, __inference_block_2): Bucketize, Log1p" in text
    assert "Log1p" in text and "ONNX has no equivalent" not in text


def test_a_call_whose_insides_all_convert_says_so():
    text, ops = unsupported_message({"StatefulPartitionedCall": 2}, {"__inference_f_9": []})
    assert "could not inline (StatefulPartitionedCall x2)" in text
    assert "every op inside them has a conversion" in text and ops == ["StatefulPartitionedCall"]
