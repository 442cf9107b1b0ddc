"""The training-time BatchNorm folds into the convs exactly: a plain LipNet-PyTorch state."""

from __future__ import annotations

import torch

from lipread.config import DEMO
from lipread.model import LipNet


def trained_looking(model: LipNet) -> LipNet:
    """Give every BatchNorm non-trivial statistics and affine parameters, then eval()."""
    g = torch.Generator().manual_seed(0)
    for bn in model.frontend.norms:
        assert isinstance(bn, torch.nn.BatchNorm3d)  # batchnorm=True
        n = bn.num_features
        bn.running_mean.copy_(torch.randn(n, generator=g))  # type: ignore[union-attr]
        bn.running_var.copy_(torch.rand(n, generator=g) + 0.2)  # type: ignore[union-attr]
        bn.weight.data.copy_(torch.randn(n, generator=g))
        bn.bias.data.copy_(torch.randn(n, generator=g))
    return model.eval()


def test_folded_batchnorm_gives_the_same_outputs_with_published_keys() -> None:
    torch.manual_seed(0)
    trained = trained_looking(LipNet(DEMO, batchnorm=True))
    state = trained.lipnet_state()
    assert set(state) == set(DEMO.shapes())
    assert all(tuple(state[k].shape) == s for k, s in DEMO.shapes().items())
    plain = LipNet(DEMO).eval()
    plain.load_lipnet_state(state)
    unfolded = LipNet(DEMO).eval()  # the raw conv weights, the BatchNorms dropped
    raw = {k: v for k, v in trained.state_dict().items() if ".norms." not in k}
    unfolded.load_lipnet_state({k.removeprefix("frontend."): v for k, v in raw.items()})
    x = torch.rand(2, 3, 9, DEMO.height, DEMO.width)
    with torch.no_grad():
        want, got = trained(x), plain(x)
        assert not torch.allclose(want, unfolded(x), atol=1e-2)  # the fold is what matters
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def test_without_batchnorm_the_state_is_the_module_state() -> None:
    model = LipNet(DEMO)
    state = model.lipnet_state()
    for key, value in model.state_dict().items():
        assert torch.equal(state[key.removeprefix("frontend.")], value)
