import pytest
import torch

from tformer import Encoder, pick_device

from ._models import model_and_ids, tiny


def test_weights_are_a_pure_function_of_config_and_seed():
    a, b = Encoder(tiny(seed=3)), Encoder(tiny(seed=3))
    for (name, pa), (_, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert torch.equal(pa, pb), name
    c = Encoder(tiny(seed=4))
    assert not torch.equal(a.blocks[0].attn.qkv.weight, c.blocks[0].attn.qkv.weight)


def test_building_a_model_leaves_the_global_rng_alone():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    Encoder(tiny())
    assert torch.equal(torch.rand(3), expected)


def test_random_init_gives_non_uniform_attention():
    model, ids = model_and_ids(pos=12)
    _, cache = model.run_with_cache(ids)
    assert cache["pattern", 0].max() > 0.3  # 1/12 would be uniform: heads must have structure to see


def test_too_long_input_names_the_numbers():
    model = Encoder(tiny(max_len=8))
    with pytest.raises(ValueError, match="9 tokens exceed max_len=8"):
        model(torch.zeros(1, 9, dtype=torch.long))


def test_accepts_a_list_and_a_1d_tensor():
    model = Encoder(tiny()).eval()
    with torch.inference_mode():
        assert model([1, 2, 3]).shape == (1, 3, 24)
        assert torch.equal(model(torch.tensor([1, 2, 3])), model([[1, 2, 3]]))


def test_optional_output_head_gives_a_distribution():
    model, ids = model_and_ids(n_outputs=5)
    probs, cache = model.run_with_cache(ids)
    assert probs.shape == (2, 9, 5)
    assert torch.allclose(probs.sum(-1), torch.ones(2, 9), atol=1e-6)
    assert torch.allclose(torch.softmax(cache["hook_logits"], -1), probs)


def test_learned_positions_and_token_types():
    model, ids = model_and_ids(pos_encoding="learned", type_vocab_size=2, embed_norm=True)
    out0 = model(ids, token_type_ids=torch.zeros_like(ids))
    out1 = model(ids, token_type_ids=torch.ones_like(ids))
    assert not torch.allclose(out0, out1)
    _, cache = model.run_with_cache(ids)
    assert torch.equal(cache["hook_pos_embed"][0], model.pos_embed.weight[:9])


def test_pos_embed_hook_holds_the_sinusoids():
    from tformer import sinusoidal_encoding

    model, ids = model_and_ids(pos_encoding="sinusoidal")
    _, cache = model.run_with_cache(ids)
    assert torch.allclose(cache["hook_pos_embed"][1], sinusoidal_encoding(9, 24))


def test_pick_device_respects_the_override(monkeypatch):
    monkeypatch.setenv("TFORMER_DEVICE", "cpu")
    assert pick_device() == torch.device("cpu")
    monkeypatch.setenv("TFORMER_DEVICE", "cuda:7")
    if torch.cuda.device_count() < 8:
        with pytest.raises(ValueError, match="not available"):
            pick_device()
    monkeypatch.setenv("TFORMER_DEVICE", "warp-drive")
    with pytest.raises(ValueError, match="not a device name"):
        pick_device()


def test_pick_device_without_override_prefers_cuda(monkeypatch):
    monkeypatch.delenv("TFORMER_DEVICE", raising=False)
    assert pick_device().type == ("cuda" if torch.cuda.is_available() else pick_device().type)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device().type in ("mps", "cpu")


@pytest.mark.gpu
def test_capture_on_cuda_matches_cpu():
    model, ids = model_and_ids()
    _, cpu_cache = model.run_with_cache(ids)
    gpu = model.to("cuda")
    out, cache = gpu.run_with_cache(ids, device="cpu")
    assert out.device.type == "cuda"
    for name, tensor in cpu_cache.items():
        assert cache[name].device.type == "cpu"
        assert torch.allclose(cache[name], tensor, atol=1e-4), name


def test_app_threads_takes_half_the_cores_or_the_override(monkeypatch):
    from tformer.ui.process import app_threads

    monkeypatch.delenv("TFORMER_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    assert app_threads() == 4
    monkeypatch.setattr("os.cpu_count", lambda: 1)
    assert app_threads() == 1
    monkeypatch.setenv("TFORMER_THREADS", "3")
    assert app_threads() == 3
    monkeypatch.setenv("TFORMER_THREADS", "many")
    with pytest.raises(ValueError, match="TFORMER_THREADS='many'"):
        app_threads()
