"""The largest batch that fits, and what happens when a batch does not."""

import pytest
from serving_toy import KV_PER_TOKEN, PARAMS, toy_registry

from roofkit import OOMError
from roofkit.serving import serve


@pytest.fixture(scope="module")
def reg(tmp_path_factory):
    return toy_registry(tmp_path_factory.mktemp("toy"))


def test_max_batch_by_hand(reg):
    est = serve("toy-lm", "toy-gpu", batch=1, input_len=1000, output_len=24, basis="datasheet",
                registry=reg)
    usable = 10e9                                 # toy-gpu: 10 GB, no usable_fraction
    by_hand = int((usable - 2 * PARAMS) // (KV_PER_TOKEN * 1024))
    assert est.max_batch() == by_hand
    assert est.max_batch(2048) == int((usable - 2 * PARAMS) // (KV_PER_TOKEN * 2048))


def test_the_largest_batch_fits_and_one_more_does_not(reg):
    kw = dict(input_len=1000, output_len=24, basis="datasheet", registry=reg)
    largest = serve("toy-lm", "toy-gpu", batch=1, **kw).max_batch()
    assert serve("toy-lm", "toy-gpu", batch=largest, **kw).fits
    over = serve("toy-lm", "toy-gpu", batch=largest + 1, **kw)
    assert not over.fits
    with pytest.raises(OOMError, match="largest batch that fits"):
        serve("toy-lm", "toy-gpu", batch=largest + 1, require_fit=True, **kw)


def test_tensor_parallelism_makes_room(reg):
    kw = dict(batch=1, input_len=1000, output_len=24, basis="datasheet", registry=reg)
    assert serve("toy-lm", "toy-gpu", tp=2, **kw).max_batch() > \
        serve("toy-lm", "toy-gpu", tp=1, **kw).max_batch()


def test_a_70b_model_in_bf16_does_not_fit_one_h100_but_fits_four():
    one = serve("llama-3.1-70b", "h100", batch=1, input_len=128, output_len=128)
    four = serve("llama-3.1-70b", "h100", tp=4, batch=64, input_len=128, output_len=128)
    assert not one.fits and one.max_batch() == 0
    assert four.fits and four.max_batch() >= 64
