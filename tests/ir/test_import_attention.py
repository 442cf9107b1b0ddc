"""`F.scaled_dot_product_attention` on both import paths (export keeps it whole: its ATen
decomposition guards fully masked rows with boolean ops no target runs) is two BATCH_MATMULs
around a SOFTMAX, and the float IR computes what torch does."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

import mdla_ir
from mdla_ir import IRError
from tests.ir.both_paths import PATHS, computes_like_torch


class Attention(nn.Module):
    """timm's Attention in short: qkv from one Linear, heads, SDPA, the projection."""

    def __init__(self, mask: bool = False, scale: float | None = None, causal: bool = False):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.proj = nn.Linear(16, 16)
        self.scale, self.causal = scale, causal
        self.register_buffer("mask", torch.linspace(-2.0, 0.0, 36).reshape(6, 6) if mask else None)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, 2, c // 2).permute(2, 0, 3, 1, 4).unbind(0)
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=self.mask, scale=self.scale, is_causal=self.causal
        )
        return self.proj(y.transpose(1, 2).reshape(b, n, c))


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("mask", "scale"), [(False, None), (True, None), (False, 0.3)])
def test_attention_is_two_batch_matmuls_around_a_softmax(
    path: str, mask: bool, scale: float | None
) -> None:
    graph = computes_like_torch(Attention(mask, scale).eval(), torch.randn(2, 6, 16), path, 1e-5)
    counts = graph.count()
    assert counts["BATCH_MATMUL"] == 2
    assert counts["SOFTMAX"] == 1
    assert not {"EQUAL", "LOGICAL_NOT", "SELECT", "REDUCE_ANY"} & set(counts)


@pytest.mark.parametrize("path", PATHS)
def test_a_causal_mask_is_refused_with_the_way_round(path: str) -> None:
    with pytest.raises(IRError, match=r"causal attention mask .*fix: give a float mask"):
        mdla_ir.from_torch(Attention(causal=True).eval(), (torch.randn(2, 6, 16),), path=path)


class Masked(nn.Module):
    """SDPA with a buffer mask (`mask`) and a dropout probability, over a Linear's heads."""

    def __init__(self, mask: torch.Tensor | None, dropout: float = 0.0) -> None:
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.register_buffer("mask", mask)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, 2, c // 2).permute(2, 0, 3, 1, 4).unbind(0)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=self.mask, dropout_p=self.dropout)


@pytest.mark.parametrize("path", PATHS)
def test_a_boolean_mask_is_refused_not_added_to_the_scores(path: str) -> None:
    """A boolean mask selects the scores it keeps; added as 0/1 it would compute another
    function (the fx path once imported it so, 55% off torch)."""
    module = Masked(torch.rand(6, 6) > 0.3).eval()
    with pytest.raises(IRError, match=r"mask that is not a float tensor.*fix: give a float mask"):
        mdla_ir.from_torch(module, (torch.randn(2, 6, 16),), path=path)


@pytest.mark.parametrize("path", PATHS)
def test_attention_dropout_is_refused_with_eval_mode(path: str) -> None:
    module = Masked(None, dropout=0.1).eval()
    with pytest.raises(IRError, match=r"attention dropout .*fix: put the model in eval mode"):
        mdla_ir.from_torch(module, (torch.randn(2, 6, 16),), path=path)
