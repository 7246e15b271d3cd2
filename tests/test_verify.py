"""verify's problem lines say in words what DVC found, and a command that works."""

from vitheory.verify import _in_words


def test_dvc_status_is_said_in_words_not_as_a_python_repr():
    said = _in_words([{"changed deps": {"params.yaml": "modified"}}, {"changed outs": {"data/a": "deleted"}},
                      "always changed"])
    assert said == "changed deps: params.yaml (modified); changed outs: data/a (deleted); always changed"
    assert "{" not in said and "'" not in said
