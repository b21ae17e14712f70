"""Inputs are validated where they enter: a template workload's dims when specs load (file and
key named, the closest name suggested), the call's keywords, format roles and counts, and
arithmetic failures inside compiled rules at run time (a SpecError, never a traceback)."""

import json
import textwrap

import numpy as np
import pytest

import roofkit
from roofkit.cli import main
from roofkit.errors import SpecError, UnknownNameError

LLAMA_DIMS = """\
layers = 32
hidden = 4096
heads = 32
kv_heads = 8
head_dim = 128
ffn = 14336
vocab = 128256
"""

MOE_DIMS = LLAMA_DIMS + "experts = 8\ntop_k = 2\nexpert_ffn = 14336\n"


@pytest.fixture(scope="module")
def reg():
    return roofkit.build_registry(entry_points=False)


def _workload(root, name, dims, template="dense"):
    d = root / "workloads"
    d.mkdir(parents=True, exist_ok=True)
    path = d / f"{name}.toml"
    path.write_text(textwrap.dedent(f"""\
        name = "{name}"
        display_name = "{name}"
        domain = "language"
        template = "{template}"
        sources = {{ config = "https://example.org/config.json" }}
        provenance = {{ dims = "config" }}
        [dims]
        """) + dims)
    return path


def _problems(tmp_path, name, dims, template="dense"):
    path = _workload(tmp_path / "specs", name, dims, template)
    with pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    return str(info.value), path


# ------------------------------------------------------------------ dims at load time
def test_an_unknown_dim_names_the_file_key_and_the_closest_dim(tmp_path):
    text, path = _problems(tmp_path, "typo", LLAMA_DIMS.replace("hidden", "hiden"))
    assert "unknown dim 'hiden'" in text and "did you mean 'hidden'" in text
    assert f"{path}:dims.hiden" in text
    assert "requires dims hidden, which the workload lacks" in text
    assert f"{path}:dims" in text


def test_a_required_dim_left_out_is_named(tmp_path):
    text, path = _problems(tmp_path, "short", LLAMA_DIMS.replace("vocab = 128256\n", ""))
    assert "template 'dense' requires dims vocab, which the workload lacks" in text
    assert f"{path}:dims" in text


def test_a_fractional_count_is_refused_with_a_suggestion(tmp_path):
    text, path = _problems(tmp_path, "half", LLAMA_DIMS.replace("heads = 32", "heads = 32.5"))
    assert "heads = 32.5 is not a whole number" in text and "heads = 32" in text
    assert f"{path}:dims.heads" in text


def test_a_zero_count_that_would_divide_by_zero_is_refused(tmp_path):
    text, path = _problems(tmp_path, "none", MOE_DIMS.replace("experts = 8", "experts = 0"),
                           template="moe")
    assert "experts = 0: template 'moe' needs at least 1" in text
    assert f"{path}:dims.experts" in text


def test_a_defaulted_dim_that_makes_the_lowering_divide_by_zero_is_refused(tmp_path):
    dims = ("layers = 4\nhidden = 256\nvocab = 1000\nssm_state = 16\nexpand = 2\n"
            "conv_kernel = 4\nmamba_head_dim = 64\nmamba_heads = 8\nvocab_pad_multiple = 0\n")
    text, path = _problems(tmp_path, "pad0", dims, template="mamba2")
    assert "derived.padded_vocab" in text and "division by zero" in text
    assert f"{path}:dims" in text


def test_a_rule_that_divides_by_a_node_dim_of_zero_is_refused_at_load(tmp_path):
    # a spec layer's activation rule divides by `gated`, 0 on ungated activations
    ops = tmp_path / "specs" / "ops"
    ops.mkdir(parents=True)
    (ops / "activation.toml").write_text(
        'overrides = "activation"\nname = "activation"\n[decode]\n'
        'flops = "rows * width / gated"\n')
    with pytest.raises(SpecError) as info:
        roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])
    text = str(info.value)
    assert "op rule 'activation' decode.flops divides by zero" in text
    assert "gpt2.toml:dims" in text  # GPT-2's FFN activation is ungated


def test_a_fixed_dim_must_keep_its_value(tmp_path):
    dims = ("layers = 2\nhidden = 128\nheads = 2\nhead_dim = 64\nffn = 512\nvocab = 1000\n"
            "max_context = 512\nnorm = 0\n")
    text, path = _problems(tmp_path, "enc", dims, template="encoder")
    assert "fixes norm = 1" in text and f"{path}:dims.norm" in text


def test_the_catalogue_workloads_pass_the_dims_check(reg):
    from roofkit.circuit.validate import workload_problems

    tables = {**reg._tables, **reg.catalogues}
    for key in reg.catalogues["workloads"]:
        w = reg.catalogues["workloads"][key]
        if w.template is not None:
            assert workload_problems(w, tables) == [], key


def test_roofkit_check_reports_a_bad_workload_with_file_and_key(tmp_path, capsys):
    path = _workload(tmp_path / "specs", "typo", LLAMA_DIMS.replace("hidden", "hiden"))
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr()
    text = out.out + out.err
    assert "dims.hiden" in text and "did you mean 'hidden'" in text
    good = _workload(tmp_path / "ok", "fine", LLAMA_DIMS)
    assert main(["check", str(good)]) == 0


def test_tp_divisibility_is_a_question_of_the_call(tmp_path, reg):
    # kv_heads = 8, heads = 32: tp = 3 loads fine and is refused when asked for
    with pytest.raises(SpecError, match="tp=3 does not divide heads"):
        roofkit.decode("llama-3.1-8b", "h100", tp=3, registry=reg)


def test_a_spec_object_with_bad_dims_is_refused_when_lowered(reg):
    import attrs

    w = reg.workload("llama-3.1-8b")
    bad = attrs.evolve(w, dims={**w.dims, "hiden": 4096.0})
    with pytest.raises(SpecError, match="did you mean 'hidden'"):
        roofkit.footprint(bad, registry=reg)


# ------------------------------------------------------------------ run-time arithmetic
def _rotary(tmp_path, flops):
    ops = tmp_path / "specs" / "ops"
    ops.mkdir(parents=True, exist_ok=True)
    (ops / "rotary.toml").write_text(
        f'overrides = "rotary"\nname = "rotary"\n[decode]\nflops = {json.dumps(flops)}\n'
        'act_bytes = "2 * rows * heads * head_dim * a_bytes"\n')
    return roofkit.build_registry(entry_points=False, spec_paths=[tmp_path / "specs"])


def test_division_by_zero_at_run_time_names_workload_node_and_rule(tmp_path):
    r = _rotary(tmp_path, "rows * heads * head_dim / context")
    assert roofkit.decode("llama-3.1-8b", "h100", context=16, registry=r).time > 0
    for context in (0, np.array([0, 16])):
        with pytest.raises(SpecError) as info:
            roofkit.decode("llama-3.1-8b", "h100", context=context, registry=r)
        text = str(info.value)
        assert "llama-3.1-8b" in text and "'attention.rotary'" in text
        assert "op rule 'rotary' decode.flops" in text and "context=" in text


def test_overflow_at_run_time_is_a_spec_error(tmp_path):
    r = _rotary(tmp_path, "rows ** 64 * heads")
    with pytest.raises(SpecError, match=r"'attention\.rotary'.*decode\.flops"):
        roofkit.decode("llama-3.1-8b", "h100", batch=10**6, registry=r)
    many = " * ".join(["1e18"] * 20)
    r2 = _rotary(tmp_path / "b", f"rows * {many}")  # floats that reach inf silently
    with pytest.raises(SpecError,
                       match=r"rotary.* decode\.flops (gives inf|is inf|fails.*overflow)"):
        roofkit.decode("llama-3.1-8b", "h100", registry=r2)


# ------------------------------------------------------------------ the call's inputs
def test_an_unknown_format_role_is_refused_with_the_roles_of_the_circuit(reg):
    with pytest.raises(UnknownNameError) as info:
        roofkit.decode("mixtral-8x7b", "h100", formats={"expert": "nvfp4"}, registry=reg)
    text = str(info.value)
    assert "format role 'expert'" in text and "Did you mean 'experts'" in text
    assert "template 'moe'" in text and "attention" in text and "router" in text
    with pytest.raises(UnknownNameError, match="format role 'foo'"):
        roofkit.footprint("llama-3.1-8b", formats={"foo": "nvfp4"}, registry=reg)
    # the special roles are always known
    assert roofkit.decode("llama-3.1-8b", "h100", formats={"activations": "fp8", "kv": "fp8"},
                          registry=reg).time > 0


def test_the_cli_refuses_an_unknown_format_role(capsys):
    assert main(["decode", "mixtral-8x7b", "h100", "--format", "expert=nvfp4"]) == 1
    err = capsys.readouterr().err
    assert "Did you mean 'experts'" in err and "router" in err
    assert main(["fit", "llama-3.1-8b", "h100", "--format", "foo=nvfp4"]) == 1
    err = capsys.readouterr().err
    assert "format role 'foo'" in err and "attention" in err


def test_an_unknown_keyword_lists_every_accepted_keyword(reg):
    with pytest.raises(UnknownNameError) as info:
        roofkit.decode("llama-3.1-8b", "h100", kv_cache_dtyp="fp8", registry=reg)
    text = str(info.value)
    assert "Did you mean 'kv_cache_dtype'" in text
    accepted = text.split("accepts:", 1)[1]
    for k in ("batch", "context", "precision", "kv_cache_dtype", "cost_model", "tp",
              "ssm_h_dtype", "formats", "basis", "conv_windows"):
        assert k in accepted, k
    with pytest.raises(UnknownNameError, match="head"):
        roofkit.prefill("llama-3.1-8b", "h100", heads=True, registry=reg)


@pytest.mark.parametrize("bad", [2.5, 0, -1, True, float("nan"), float("inf"), "4",
                                 [1, 2.5], np.array([1.5]), np.array([0, 1]), []])
def test_batch_and_seqs_must_be_positive_whole_numbers(reg, bad):
    with pytest.raises(ValueError, match="whole number"):
        roofkit.decode("llama-3.1-8b", "h100", batch=bad, registry=reg)
    with pytest.raises(ValueError, match="whole number"):
        roofkit.fits("llama-3.1-8b", "h100", seqs=bad, registry=reg)
    with pytest.raises(ValueError, match="whole number"):
        roofkit.prefill("llama-3.1-8b", "h100", seqs=bad, registry=reg)


def test_counts_may_be_arrays_of_whole_numbers(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=np.array([1, 2, 4]),
                         context=[128.0, 256.0, 512.0], registry=reg)
    assert est.time.shape == (3,)
    fit = roofkit.fits("llama-3.1-8b", "h100", seqs=np.array([1, 1000]), context=8192,
                       registry=reg)
    assert fit.fits.tolist() == [True, False]
    one = roofkit.fits("llama-3.1-8b", "h100", seqs=1000, context=8192, registry=reg)
    assert fit.required[1] == pytest.approx(one.required)
    assert fit.max_seqs.tolist() == [one.max_seqs, one.max_seqs]
    assert json.loads(json.dumps(fit.to_dict()))["fits"] == [True, False]
    with pytest.raises(ValueError, match="context"):
        roofkit.decode("llama-3.1-8b", "h100", context=10.5, registry=reg)


def test_by_op_and_by_section_tables_have_one_name_column(capsys):
    assert main(["decode", "mixtral-8x7b", "h100", "--batch", "8", "--by", "op"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("op "))
    assert head.split()[:3] == ["op", "sections", "count"]
    row = next(line for line in lines if line.startswith("expert_gate_up"))
    assert row.split()[:3] == ["expert_gate_up", "main", "32"]
    assert main(["prefill", "llama-3.1-8b", "h100", "--by", "section"]) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("section "))
    assert head.split()[:2] == ["section", "count"]
    row = next(line for line in lines if line.startswith("main "))
    assert row.split()[1] == "320" and "*" not in row
    assert main(["decode", "llama-3.1-8b", "h100", "--by", "node"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert next(line for line in lines if line.startswith("node ")).split()[:4] == \
        ["node", "op", "section", "count"]


# ------------------------------------------------------------------ fit of a step
def test_a_decode_that_does_not_fit_says_so_and_is_still_estimated(reg):
    est = roofkit.decode("llama-3.1-70b", "h100", batch=64, context=2048, registry=reg)
    fit = roofkit.fits("llama-3.1-70b", "h100", seqs=64, context=2048, registry=reg)
    assert est.time > 0
    assert est.fits is False and fit.fits is False
    assert est.memory_required == pytest.approx(fit.required)
    assert est.memory_margin == pytest.approx(fit.margin) and est.memory_margin < 0
    assert est.memory_required > est.footprint.weights > est.usable_memory
    d = est.to_dict()
    assert d["memory"]["fits"] is False and d["memory"]["margin_bytes"] < 0
    assert d["memory"]["sequences"] == 64 and d["memory"]["per_device"] is True


def test_the_step_fit_is_per_device_under_tp(reg):
    est = roofkit.decode("llama-3.1-70b", "h100", batch=8, context=2048, tp=4, registry=reg)
    fit = roofkit.fits("llama-3.1-70b", "h100", seqs=8, context=2048, tp=4, registry=reg)
    assert est.fits is True and fit.fits is True
    assert est.memory_required == pytest.approx(fit.required)
    one = roofkit.decode("llama-3.1-70b", "h100", batch=8, context=2048, registry=reg)
    assert est.memory_required < one.memory_required / 3


def test_arrays_of_batch_sizes_give_an_array_of_fits(reg):
    est = roofkit.decode("llama-3.1-8b", "h100", batch=np.array([1, 1000]), context=8192,
                         registry=reg)
    assert est.fits.tolist() == [True, False]
    assert json.loads(json.dumps(est.to_dict()))["memory"]["fits"] == [True, False]


def test_prefill_checks_the_prompt_kv_of_its_sequences(reg):
    est = roofkit.prefill("llama-3.1-8b", "h100", tokens=8192, seqs=4, registry=reg)
    fit = roofkit.fits("llama-3.1-8b", "h100", seqs=4, context=8192, registry=reg)
    assert est.memory_required == pytest.approx(fit.required) and est.fits


def test_the_cli_says_when_a_step_does_not_fit_and_by_how_much(capsys):
    assert main(["decode", "llama-3.1-70b", "h100", "--batch", "64", "--context",
                 "2048"]) == 0
    out = capsys.readouterr().out
    # usable 0.9 x 85,045,477,376 B (the H100's CUDA total) = 76.54 GB; 184.1 - 76.5 = 107.5
    assert "DOES NOT FIT" in out and "short by 107.5 GB" in out
    assert "needs 184.1 GB of h100-sxm's usable 76.54 GB" in out
    assert main(["decode", "llama-3.1-70b", "h100", "--batch", "64", "--context", "2048",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["memory"]["fits"] is False
    # -112.06 GB against 0.9 x 80e9 B; the 4.54 GB more of 0.9 x 85,045,477,376 B
    assert d["memory"]["margin_bytes"] == pytest.approx(-112.06e9 + (0.9 * 85_045_477_376 - 72e9),
                                                        rel=1e-3)
    assert main(["decode", "llama-3.1-8b", "h100", "--batch", "4"]) == 0
    out = capsys.readouterr().out
    assert "DOES NOT FIT" not in out and "to spare" in out


def test_an_absurdly_large_dim_is_refused(tmp_path):
    text, path = _problems(tmp_path, "huge", LLAMA_DIMS.replace("vocab = 128256",
                                                                 "vocab = 1e300"))
    assert "[0, 1e+15]" in text and f"{path}:dims.vocab" in text
