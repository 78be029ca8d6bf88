import pytest

from fakefs.kernel.lib.ctype import ALNUM, DIGIT, SPACE, XDIGIT, skip_spaces, strstrip


def test_latin1_classes():
    assert "\xa0" in SPACE and "\v" in SPACE and "_" not in ALNUM
    assert "\xe9" in ALNUM and "\xc0" in ALNUM          # accented letters
    assert "\xd7" not in ALNUM and "\xf7" not in ALNUM  # the multiply and divide signs
    assert "\xb2" not in DIGIT and "a" not in DIGIT and "F" in XDIGIT and "g" not in XDIGIT


@pytest.mark.parametrize("text,stripped,skipped", [
    ("  a b \n", "  a b", "a b \n"), ("\xa0x\xa0", "\xa0x", "x\xa0"), ("", "", ""),
    (" \t\n", "", ""), ("x", "x", "x"),
])
def test_strstrip_and_skip_spaces(text, stripped, skipped):
    assert strstrip(text) == stripped
    assert skip_spaces(text) == skipped
