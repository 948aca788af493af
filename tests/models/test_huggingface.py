"""Hugging Face Transformers on `neuron`: tiny random models of each family.

Every model is built from a small random config in the test (no hub
access), on the CPU with a fixed seed; a deep copy goes to `neuron`. Both
twins run an eval forward (logits compared) and one training step (loss,
every gradient compared). Beside them: `generate()` with the KV cache,
`from_pretrained(..., device_map="neuron")` and `device_map="auto"` (through
Accelerate), and `Trainer` choosing `neuron` on its own.
"""

import copy

import pytest
import torch

import torch_neuronx  # noqa: F401

from torchvision_compat import import_torchvision

# Transformers imports torchvision's image utilities when torchvision is
# installed; PyPI's torchvision needs the compatibility shim to import.
import_torchvision()
transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

VOCAB = 96
TOLERANCE = dict(rtol=1e-4, atol=1e-4)


def decoder(config_class, **overrides):
    """A tiny decoder-only config in Llama's vocabulary of field names."""
    fields = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  pad_token_id=0, bos_token_id=1, eos_token_id=2)
    fields.update(overrides)
    return lambda: config_class(**fields)


C = transformers
CAUSAL_LM = [
    ("llama", decoder(C.LlamaConfig)),
    ("mistral", decoder(C.MistralConfig, sliding_window=8)),
    ("qwen2", decoder(C.Qwen2Config)),
    ("qwen3", decoder(C.Qwen3Config, head_dim=8)),
    ("gemma", decoder(C.GemmaConfig, head_dim=8)),
    ("olmo", decoder(C.OlmoConfig)),
    ("falcon", lambda: C.FalconConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                      num_attention_heads=4, pad_token_id=0, bos_token_id=1,
                                      eos_token_id=2)),
    ("gpt2", lambda: C.GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4,
                                  n_positions=64, pad_token_id=0, bos_token_id=1,
                                  eos_token_id=2)),
    ("mixtral", decoder(C.MixtralConfig, num_local_experts=4, num_experts_per_tok=2)),
    ("qwen2_moe", decoder(C.Qwen2MoeConfig, num_experts=4, num_experts_per_tok=2,
                          moe_intermediate_size=24, shared_expert_intermediate_size=24)),
    ("mamba", lambda: C.MambaConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                    state_size=8, pad_token_id=0, bos_token_id=1,
                                    eos_token_id=2)),
]

ENCODERS = [
    ("bert", lambda: C.BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=48,
                                  max_position_embeddings=64, num_labels=3)),
    ("deberta_v2", lambda: C.DebertaV2Config(vocab_size=VOCAB, hidden_size=32,
                                             num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=48, max_position_embeddings=64,
                                             relative_attention=True, position_buckets=16,
                                             pos_att_type=["p2c", "c2p"], num_labels=3)),
]


def without_dropout(config):
    for name in ("hidden_dropout_prob", "attention_probs_dropout_prob", "attention_dropout",
                 "hidden_dropout", "resid_pdrop", "embd_pdrop", "attn_pdrop", "dropout_rate",
                 "classifier_dropout", "pooler_dropout"):
        if hasattr(config, name):
            setattr(config, name, 0.0)
    return config


def twins(auto_class, make_config):
    """The same random model on the CPU and on `neuron`, in eval mode."""
    torch.manual_seed(0)
    cpu = auto_class.from_config(without_dropout(make_config())).eval()
    return cpu, copy.deepcopy(cpu).to("neuron")


def tokens(batch=2, length=12):
    generator = torch.Generator().manual_seed(1)
    return torch.randint(3, VOCAB, (batch, length), generator=generator)


def to(device, inputs):
    return {name: value.to(device) for name, value in inputs.items()}


def assert_trains_alike(cpu, neuron, inputs):
    """Eval logits, then one training step's loss and every gradient."""
    with torch.no_grad():
        expected = cpu(**inputs).logits
        actual = neuron(**to("neuron", inputs)).logits
    torch.testing.assert_close(actual.cpu(), expected, **TOLERANCE)

    cpu.train()
    neuron.train()
    cpu_loss = cpu(**inputs).loss
    neuron_loss = neuron(**to("neuron", inputs)).loss
    cpu_loss.backward()
    neuron_loss.backward()
    torch.testing.assert_close(neuron_loss.cpu(), cpu_loss, **TOLERANCE)
    for (name, expected_parameter), actual_parameter in zip(cpu.named_parameters(),
                                                            neuron.parameters()):
        if expected_parameter.grad is None:
            assert actual_parameter.grad is None, name
            continue
        torch.testing.assert_close(actual_parameter.grad.cpu(), expected_parameter.grad,
                                   **TOLERANCE, msg=lambda m, name=name: f"{name}: {m}")


@pytest.mark.parametrize("name,make_config", CAUSAL_LM, ids=[name for name, _ in CAUSAL_LM])
def test_causal_lm_matches_cpu(name, make_config):
    cpu, neuron = twins(C.AutoModelForCausalLM, make_config)
    ids = tokens()
    mask = torch.ones_like(ids)
    mask[1, :3] = 0  # left padding in the second row
    assert_trains_alike(cpu, neuron, dict(input_ids=ids, attention_mask=mask, labels=ids))


@pytest.mark.parametrize("name,make_config", ENCODERS, ids=[name for name, _ in ENCODERS])
def test_encoder_classification_matches_cpu(name, make_config):
    cpu, neuron = twins(C.AutoModelForSequenceClassification, make_config)
    ids = tokens()
    mask = torch.ones_like(ids)
    mask[1, -4:] = 0
    labels = torch.tensor([0, 2])
    assert_trains_alike(cpu, neuron, dict(input_ids=ids, attention_mask=mask, labels=labels))


def test_encoder_decoder_t5_matches_cpu():
    cpu, neuron = twins(C.AutoModelForSeq2SeqLM,
                        lambda: C.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48,
                                           num_layers=2, num_heads=4,
                                           relative_attention_num_buckets=8,
                                           decoder_start_token_id=0, pad_token_id=0,
                                           eos_token_id=1))
    labels = tokens(length=7)
    assert_trains_alike(cpu, neuron, dict(input_ids=tokens(), labels=labels))


@pytest.mark.parametrize("name", ["llama", "gpt2", "mixtral"])
def test_generate_with_kv_cache_matches_cpu(name):
    make_config = dict(CAUSAL_LM)[name]
    cpu, neuron = twins(C.AutoModelForCausalLM, make_config)
    ids = tokens(length=6)
    options = dict(max_new_tokens=8, do_sample=False, use_cache=True, pad_token_id=0)
    expected = cpu.generate(ids, **options)
    actual = neuron.generate(ids.to("neuron"), **options)
    assert actual.device.type == "neuron"
    assert torch.equal(actual.cpu(), expected)


def test_t5_generate_matches_cpu():
    cpu, neuron = twins(C.AutoModelForSeq2SeqLM,
                        lambda: C.T5Config(vocab_size=VOCAB, d_model=32, d_kv=8, d_ff=48,
                                           num_layers=2, num_heads=4,
                                           decoder_start_token_id=0, pad_token_id=0,
                                           eos_token_id=1))
    ids = tokens(length=6)
    options = dict(max_new_tokens=6, do_sample=False, num_beams=2)
    assert torch.equal(neuron.generate(ids.to("neuron"), **options).cpu(),
                       cpu.generate(ids, **options))


@pytest.fixture(scope="module")
def saved_llama(tmp_path_factory):
    path = tmp_path_factory.mktemp("llama")
    torch.manual_seed(0)
    model = C.LlamaForCausalLM(dict(CAUSAL_LM)["llama"]()).eval()
    model.save_pretrained(path)
    return path, model


def all_neuron_devices():
    return {torch.device("neuron", index) for index in range(torch.neuron.device_count())}


@pytest.mark.parametrize("device_map", ["neuron", "auto"])
def test_from_pretrained_with_device_map(saved_llama, device_map):
    """"neuron" puts the model on the current device; "auto" has Accelerate
    balance it over every neuron device (each holding some layers, its hooks
    moving activations between them), as over several GPUs."""
    path, cpu = saved_llama
    model = C.AutoModelForCausalLM.from_pretrained(path, device_map=device_map)
    devices = {parameter.device for parameter in model.parameters()}
    expected = {torch.device("neuron", 0)} if device_map == "neuron" else all_neuron_devices()
    assert devices == expected
    ids = tokens()
    with torch.no_grad():
        torch.testing.assert_close(model(ids.to("neuron")).logits.cpu(), cpu(ids).logits,
                                   **TOLERANCE)


def test_trainer_chooses_neuron(tmp_path):
    torch.manual_seed(0)
    model = C.LlamaForCausalLM(dict(CAUSAL_LM)["llama"]())
    ids = tokens(batch=8)
    dataset = [dict(input_ids=row, labels=row) for row in ids]
    arguments = C.TrainingArguments(output_dir=str(tmp_path), max_steps=3,
                                    per_device_train_batch_size=4, learning_rate=1e-3,
                                    report_to=[], save_strategy="no", logging_steps=1,
                                    dataloader_pin_memory=False)
    assert arguments.device == torch.device("neuron", 0)
    trainer = C.Trainer(model=model, args=arguments, train_dataset=dataset)
    result = trainer.train()
    assert next(model.parameters()).device.type == "neuron"
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert len(losses) == 3 and all(torch.isfinite(torch.tensor(losses)))
    assert result.global_step == 3
